package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/rpctest"
	"github.com/erpc-go/erpc/transport/udp"
)

// recorder is a transport that keeps a copy of every datagram it sends and
// receives, for a hostile sender to replay.
type recorder struct {
	transport.Transport
	mu         sync.Mutex
	sent, recv [][]byte
	on         bool
}

func (r *recorder) Send(msgs []transport.Message) error {
	r.mu.Lock()
	if r.on {
		for _, m := range msgs {
			r.sent = append(r.sent, append(append([]byte(nil), m.Head...), m.Payload...))
		}
	}
	r.mu.Unlock()
	return r.Transport.Send(msgs)
}

func (r *recorder) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	return r.Transport.Receive(func(from netip.AddrPort, data []byte) {
		r.mu.Lock()
		if r.on {
			r.recv = append(r.recv, bytes.Clone(data))
		}
		r.mu.Unlock()
		fn(from, data)
	})
}

func (r *recorder) PacketSize() int { return r.Transport.(transport.PacketSizer).PacketSize() }

// take returns what was recorded since the last take.
func (r *recorder) take() (sent, recv [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent, recv = r.sent, r.recv
	r.sent, r.recv = nil, nil
	return sent, recv
}

func recordingEndpoint(t *testing.T, opts ...erpc.Option) (*erpc.Endpoint, *recorder) {
	tr, err := udp.Listen("127.0.0.1:0", udp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Transport: tr, on: true}
	return listenT(t, nil, "", append(opts, erpc.WithTransport(rec))...), rec
}

// connectPacket is a connect for client session num with token, as the
// client at that address would send it.
func connectPacket(num, token uint32) []byte {
	h := wire.Header{Type: wire.TypeConnect, Session: ^uint32(0), Token: token, TxSeq: 1}
	c := wire.Connect{Session: num, Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: 1432}
	var b [wire.ConnectLen]byte
	c.Put(b[:])
	return append(wire.AppendHeader(nil, &h), b[:]...)
}

// TestForgedConnectCannotEndSession: a connect forged with the client's
// address and session number but another token, while a call is being
// handled, must leave the live session alone: the call completes and the
// session keeps serving.
func TestForgedConnectCannotEndSession(t *testing.T) {
	checkLeaks(t)
	sp := newSpoofer(t)
	srv := udpNet{}.Listen(t, serverWith(t, "Slow", func(_ context.Context, req []byte) ([]byte, error) {
		time.Sleep(200 * time.Millisecond)
		return req, nil
	}, erpc.Background()))
	cli := udpNet{}.Listen(t, nil) // a fresh endpoint: its first session is number 0
	s := dialT(t, udpNet{}, cli, srv)
	done := make(chan error, 1)
	go func() {
		resp, err := call(t, s, "Slow", []byte("in flight"))
		if err == nil && string(resp) != "in flight" {
			err = errFromString("wrong response " + string(resp))
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	before := srv.Stats().PacketsIn
	for _, tok := range []uint32{1, 0xdeadbeef, rand.Uint32() | 1} {
		if err := sp.send(cli.Addr(), srv.Addr(), connectPacket(0, tok)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the call in flight when the connects were forged: %v", err)
	}
	if resp, err := call(t, s, "Slow", []byte("after")); err != nil || string(resp) != "after" {
		t.Fatalf("the session after the forged connects: %q %v", resp, err)
	}
	if got := srv.Stats().PacketsIn - before; got < 3 {
		t.Fatalf("the server got %d packets after the forgery began: the forged connects never arrived", got)
	}
}

type errFromString string

func (e errFromString) Error() string { return string(e) }

// TestHostileSender: a live server gets random datagrams, truncated and
// bit-flipped copies of a finished session's datagrams and exact replays
// of both that session's and the live session's datagrams, forged with the
// client's (or server's) address, while a legitimate client makes calls
// on a new session that reuses the finished one's number. No panic; every
// legitimate call succeeds with its own bytes; no handler runs twice.
// The TLS variant runs the same attack on TLS endpoints: every hostile
// datagram is then dropped before the engine sees it, and counted.
func TestHostileSender(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) { testHostileSender(t, nil) })
	t.Run("tls", func(t *testing.T) { testHostileSender(t, newTestPKI(t)) })
}

func testHostileSender(t *testing.T, pki *testPKI) {
	checkLeaks(t)
	sp := newSpoofer(t)
	var mu sync.Mutex
	runs := map[uint64]int{}
	var srvNet rpctest.Net = udpNet{}
	var cliOpts []erpc.Option
	if pki != nil {
		srvNet = tlsNet{udpNet{}, pki}
		cliOpts = append(cliOpts, erpc.WithTLS(pki.clientTLS()))
	}
	srv := srvNet.Listen(t, serverWith(t, "Tag", func(_ context.Context, req []byte) ([]byte, error) {
		mu.Lock()
		runs[binary.LittleEndian.Uint64(req)]++
		mu.Unlock()
		return req, nil
	}))
	cli, rec := recordingEndpoint(t, cliOpts...)
	tag := atomic.Uint64{}
	calls := func(s *erpc.Session, goroutines, n int) {
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), tag.Load()))
				for range n {
					req := make([]byte, 8+rng.IntN([]int{64, 2000, 20000}[rng.IntN(3)]))
					for i := range req {
						req[i] = byte(rng.Uint32())
					}
					binary.LittleEndian.PutUint64(req, tag.Add(1))
					resp, err := call(t, s, "Tag", req)
					if err != nil || !bytes.Equal(resp, req) {
						t.Errorf("legitimate call: %d bytes back (want %d), %v", len(resp), len(req), err)
						return
					}
				}
			})
		}
		wg.Wait()
	}

	// A session whose datagrams are captured, then closed.
	old := dialT(t, udpNet{}, cli, srv)
	calls(old, 4, 25)
	old.Close()
	oldSent, oldRecv := rec.take()

	// The live session reuses the old one's number.
	live := dialT(t, udpNet{}, cli, srv)
	stop := make(chan struct{})
	var hostile sync.WaitGroup
	var forged atomic.Int64
	hostile.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		junk, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(srv.Addr()))
		if err != nil {
			t.Error(err)
			return
		}
		defer junk.Close()
		mutate := func(p []byte) []byte {
			p = bytes.Clone(p)
			switch rng.IntN(3) {
			case 0:
				p = p[:rng.IntN(len(p)+1)]
			case 1:
				for range 1 + rng.IntN(4) {
					if len(p) > 0 {
						p[rng.IntN(len(p))] ^= 1 << rng.IntN(8)
					}
				}
			default:
				if len(p) >= wire.HeaderLen {
					binary.LittleEndian.PutUint32(p[4*(2+rng.IntN(8)):], rng.Uint32())
				}
			}
			return p
		}
		for {
			select {
			case <-stop:
				return
			default:
			}
			liveSent, liveRecv := rec.take()
			for range 50 {
				var err error
				switch k := rng.IntN(6); {
				case k == 0: // noise from elsewhere
					b := make([]byte, rng.IntN(1500))
					for i := range b {
						b[i] = byte(rng.Uint32())
					}
					if len(b) > 2 && rng.IntN(2) == 0 {
						b[0], b[1], b[2] = wire.Magic, wire.Version, byte(1+rng.IntN(13))
					}
					_, err = junk.Write(b)
				case k == 1 && len(oldSent) > 0: // the old session's client packets, mangled
					err = sp.send(cli.Addr(), srv.Addr(), mutate(oldSent[rng.IntN(len(oldSent))]))
				case k == 2 && len(oldRecv) > 0: // and its server packets
					err = sp.send(srv.Addr(), cli.Addr(), mutate(oldRecv[rng.IntN(len(oldRecv))]))
				case k == 3 && len(oldSent) > 0: // replayed as they were
					err = sp.send(cli.Addr(), srv.Addr(), oldSent[rng.IntN(len(oldSent))])
				case k == 4 && len(liveSent) > 0: // the live session's own packets, again
					err = sp.send(cli.Addr(), srv.Addr(), liveSent[rng.IntN(len(liveSent))])
				case k == 5 && len(liveRecv) > 0:
					err = sp.send(srv.Addr(), cli.Addr(), liveRecv[rng.IntN(len(liveRecv))])
				default:
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				forged.Add(1)
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	calls(live, 8, 100)
	close(stop)
	hostile.Wait()

	mu.Lock()
	defer mu.Unlock()
	for tag, n := range runs {
		if n != 1 {
			t.Errorf("request %d ran %d times", tag, n)
		}
	}
	if len(runs) != int(tag.Load()) {
		t.Errorf("%d requests ran, %d calls succeeded", len(runs), tag.Load())
	}
	st := srv.Stats()
	if pki != nil {
		if forged.Load() < 1000 || st.TLSOpenFailures == 0 || st.TLSReplays == 0 || st.TLSPlaintextDropped == 0 {
			t.Fatalf("the hostile traffic did not arrive: %d datagrams forged; server %+v", forged.Load(), st)
		}
		t.Logf("%d hostile datagrams; server dropped %d failing to open, %d replays, %d plaintext, %d for no association",
			forged.Load(), st.TLSOpenFailures, st.TLSReplays, st.TLSPlaintextDropped, st.TLSUnknownAssoc)
		return
	}
	if forged.Load() < 1000 || st.DropMalformed == 0 || st.DropUnknownSession == 0 {
		t.Fatalf("the hostile traffic did not arrive: %d datagrams forged; server %+v", forged.Load(), st)
	}
	t.Logf("%d hostile datagrams; server dropped %d malformed, %d for no session, %d stale; client %+v",
		forged.Load(), st.DropMalformed, st.DropUnknownSession, st.DropStale, cli.Stats())
}
