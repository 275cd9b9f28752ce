package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// initialWatcher wraps a client's transport as a passive on-path
// observer would see it: it keeps a copy of the client's first protected
// Initial datagram (whose destination ID, in the clear, is the client's
// chosen Initial ID: the Initial keys come from it, seal's doc says).
type initialWatcher struct {
	transport.Transport
	mu    sync.Mutex
	first []byte
	to    netip.AddrPort
}

func (w *initialWatcher) PacketSize() int { return w.Transport.(transport.PacketSizer).PacketSize() }

func (w *initialWatcher) Send(msgs []transport.Message) error {
	w.mu.Lock()
	for _, m := range msgs {
		b := append(append([]byte(nil), m.Head...), m.Payload...)
		if w.first == nil && len(b) > seal.Overhead && b[0] == seal.Magic && b[1]&3 == 0 {
			w.first, w.to = b, m.To
		}
	}
	w.mu.Unlock()
	return w.Transport.Send(msgs)
}

// forgeInitialClose builds what an observer of the client's first
// Initial can: an Initial-level close frame (internal/secure's doc: kind
// 2, srcID, offset, length, reason), sealed with the Initial keys anyone
// derives from the Initial ID, as the server (toClient) or as the client.
// Its packet number is far above any real Initial's.
func forgeInitialClose(t *testing.T, first []byte, toClient bool) []byte {
	t.Helper()
	h, err := seal.ParseHeader(first)
	if err != nil {
		t.Fatal(err)
	}
	csec, ssec := seal.InitialSecrets(h.DestID)
	op, err := seal.NewOpener(seal.InitialSuite, csec, seal.LevelInitial)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := op.Open(nil, first)
	if err != nil {
		t.Fatalf("the observer cannot open the client's Initial: %v", err)
	}
	clientID := binary.LittleEndian.Uint64(plain[1:9]) // the frame's srcID
	reason := []byte("forged by an on-path observer")
	frame := []byte{2}
	frame = binary.LittleEndian.AppendUint64(frame, 0x0badc0de) // any nonzero srcID
	frame = binary.LittleEndian.AppendUint32(frame, 0)
	frame = binary.LittleEndian.AppendUint16(frame, uint16(len(reason)))
	frame = append(frame, reason...)
	secret, dest := csec, h.DestID // to the server: its Initial ID routes it
	if toClient {
		secret, dest = ssec, clientID
	}
	s, err := seal.NewSealer(seal.InitialSuite, secret, seal.LevelInitial)
	if err != nil {
		t.Fatal(err)
	}
	for range 200 { // move past every packet number the handshake used
		s.Seal(nil, dest, frame)
	}
	return s.Seal(nil, dest, frame)
}

// TestReviewTLSForgedInitialCloseEndsSession: an established TLS session
// with a call in flight (its handler is running). An on-path observer,
// who read only the client's first Initial (in the clear, like every
// Initial: "they are not secret"), forges one Initial-level close frame
// and sends it from a socket of its own, once to the client and (second
// case) once to the server. Promise (WithTLS, seal doc): every packet
// after the handshake is authenticated; a packet that fails to open is
// dropped, counted, never answered; resets "are authenticated too, or
// accepted only in forms that cannot end or redirect a session" (issue
// 30). Instead the Initial keys are kept after the handshake, the forged
// close opens, and the established association fails: the in-flight
// call, whose handler ran, fails, and nothing counts the forgery.
func TestReviewTLSForgedInitialCloseEndsSession(t *testing.T) {
	for _, toClient := range []bool{true, false} {
		name := "to-server"
		if toClient {
			name = "to-client"
		}
		t.Run(name, func(t *testing.T) {
			pki := newTestPKI(t)
			release := make(chan struct{})
			var ran atomic.Int64
			srv := serverWith(t, "Slow", func(_ context.Context, req []byte) ([]byte, error) {
				ran.Add(1)
				<-release
				return req, nil
			}, erpc.Background())
			sep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
			u, err := udp.Listen("127.0.0.1:0", udp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := &initialWatcher{Transport: u}
			cep := listenT(t, nil, "", erpc.WithTransport(w), erpc.WithTLS(pki.clientTLS()))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := cep.Dial(ctx, sep.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			go func() { // whatever happens, the handler ends
				time.Sleep(5 * time.Second)
				select {
				case <-release:
				default:
					close(release)
				}
			}()
			done := make(chan error, 1)
			go func() {
				resp, err := s.Call(ctx, "Slow", []byte("in flight"), nil)
				if err == nil && !bytes.Equal(resp, []byte("in flight")) {
					err = errors.New("wrong answer")
				}
				done <- err
			}()
			waitFor(t, "the handler to run", func() bool { return ran.Load() == 1 })

			w.mu.Lock()
			first := w.first
			w.mu.Unlock()
			forged := forgeInitialClose(t, first, toClient)
			victim, other := cep, sep
			to := cep.Addr()
			if !toClient {
				victim, other, to = sep, cep, sep.Addr()
			}
			_ = other
			before := victim.Stats()
			fc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer fc.Close()
			if _, err := fc.WriteToUDP(forged, net.UDPAddrFromAddrPort(to)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // the forgery arrives and is handled
			after := victim.Stats()
			close(release)
			err = <-done
			counted := tlsDrops(after) - tlsDrops(before)
			t.Logf("forged close sent to the %s; its counters: dropped +%d, handshake failures +%d", name[3:], counted, after.TLSHandshakeFailures-before.TLSHandshakeFailures)
			if err != nil || counted != 1 {
				t.Fatalf("one forged Initial-level close (sent after the handshake, by one who read only the client's first Initial) "+
					"was counted as dropped %d times (want 1) and the in-flight call, whose handler ran %d time(s), ended with: %v (NotExecuted=%v)",
					counted, ran.Load(), err, erpc.NotExecuted(err))
			}
		})
	}
}
