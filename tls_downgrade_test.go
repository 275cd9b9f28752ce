package erpc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// refusalForger wraps a client's transport: it learns the destination ID
// of the client's first protected Initial, and delivers to the client,
// ahead of anything real, a forged plaintext "does not speak TLS" refusal
// from the server's address echoing that ID (plus delta). It also checks
// that the client never sends a datagram in the clear.
type refusalForger struct {
	transport.Transport
	delta  uint64
	mu     sync.Mutex
	server netip.AddrPort
	id     uint64
	forged int
	plain  int
}

func (f *refusalForger) PacketSize() int { return f.Transport.(transport.PacketSizer).PacketSize() }

func (f *refusalForger) Send(msgs []transport.Message) error {
	f.mu.Lock()
	for _, m := range msgs {
		if m.Head[0] != 0xE9 {
			f.plain++
		} else if f.id == 0 && m.Head[1]&3 == 0 { // an Initial: its destID is the client's chosen one
			f.id, f.server = binary.LittleEndian.Uint64(m.Head[2:]), m.To
		}
	}
	f.mu.Unlock()
	return f.Transport.Send(msgs)
}

func (f *refusalForger) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	f.mu.Lock()
	if f.id != 0 && f.forged < 3 {
		f.forged++
		h := wire.Header{Type: wire.TypeConnectAck, Code: wire.CodeTLSUnsupported, ReqNum: f.id + f.delta}
		b := make([]byte, wire.HeaderLen+wire.ConnectLen)
		h.Put(b)
		f.mu.Unlock()
		fn(f.server, b)
	} else {
		f.mu.Unlock()
	}
	return f.Transport.Receive(fn)
}

// TestTLSForgedRefusalNeverDowngrades: an on-path forger's plaintext
// "this server does not speak TLS" refusal either names another dial
// (ignored: the session comes up under TLS) or this one (the dial fails
// with Unauthenticated); either way the client sends nothing in the
// clear and no plaintext session is ever made.
func TestTLSForgedRefusalNeverDowngrades(t *testing.T) {
	pki := newTestPKI(t)
	for _, delta := range []uint64{1, 0} {
		sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
		u, err := udp.Listen("127.0.0.1:0", udp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := &refusalForger{Transport: u, delta: delta}
		cep := listenT(t, nil, "", erpc.WithTransport(f), erpc.WithTLS(pki.clientTLS()))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := cep.Dial(ctx, sep.Addr().String())
		cancel()
		f.mu.Lock()
		forged, plain := f.forged, f.plain
		f.mu.Unlock()
		if forged == 0 {
			t.Fatalf("delta %d: no refusal forged", delta)
		}
		if plain != 0 {
			t.Fatalf("delta %d: the client sent %d datagrams in the clear", delta, plain)
		}
		if delta != 0 {
			if err != nil {
				t.Fatalf("a refusal naming another dial failed this one: %v", err)
			}
			if st := cep.Stats(); st.TLSHandshakes != 1 || st.TLSPlaintextDropped == 0 {
				t.Fatalf("client: %d handshakes, %d plaintext dropped", st.TLSHandshakes, st.TLSPlaintextDropped)
			}
			s.Close()
			continue
		}
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.Unauthenticated || !strings.Contains(e.Msg, "does not speak TLS") {
			t.Fatalf("a refusal naming this dial: %v, want Unauthenticated", err)
		}
		if st := sep.Stats(); st.ServerSessions != 0 || st.TLSPlaintextDropped != 0 {
			t.Fatalf("server: %d sessions, %d plaintext packets", st.ServerSessions, st.TLSPlaintextDropped)
		}
	}
}
