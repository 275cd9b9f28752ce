package erpc_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// tamperer wraps a transport and, on the datagrams it sends, injects
// faults: a copy with one bit flipped anywhere, a replay of an earlier
// datagram, and an original held back and delivered much later (after
// key updates: under an old key). Every injection is counted.
type tamperer struct {
	transport.Transport
	mu                     sync.Mutex
	rng                    *rand.Rand
	on                     bool
	flips, replays, delays int
	sent                   [][]byte
	held                   []transport.Message
}

func (t *tamperer) PacketSize() int { return t.Transport.(transport.PacketSizer).PacketSize() }

func (t *tamperer) Send(msgs []transport.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return t.Transport.Send(msgs)
	}
	var out []transport.Message
	for _, m := range msgs {
		b := append(append([]byte(nil), m.Head...), m.Payload...)
		if b[0] != 0xE9 || b[1]&3 != 2 { // Application packets only: the handshake is done
			out = append(out, m)
			continue
		}
		switch r := t.rng.IntN(20); {
		case r == 0: // flip one bit anywhere, and send the original too
			f := append([]byte(nil), b...)
			f[t.rng.IntN(len(f))] ^= 1 << t.rng.IntN(8)
			out = append(out, transport.Message{To: m.To, Head: f})
			t.flips++
		case r == 1 && len(t.sent) > 0: // replay an earlier datagram
			out = append(out, transport.Message{To: m.To, Head: t.sent[t.rng.IntN(len(t.sent))]})
			t.replays++
		case r == 2 && len(t.held) < 8: // hold the original back: the engine resends it anew
			t.held = append(t.held, transport.Message{To: m.To, Head: b})
			continue
		}
		if len(t.sent) < 256 {
			t.sent = append(t.sent, b)
		}
		out = append(out, transport.Message{To: m.To, Head: b, Path: m.Path})
	}
	return t.Transport.Send(out)
}

// release delivers the held-back datagrams (now under old keys).
func (t *tamperer) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delays += len(t.held)
	_ = t.Transport.Send(t.held)
	t.held = nil
}

func (t *tamperer) injected() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flips + t.replays + t.delays
}

func tamperUDP(t *testing.T, seed uint64) *tamperer {
	u, err := udp.Listen("127.0.0.1:0", udp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &tamperer{Transport: u, rng: rand.New(rand.NewPCG(seed, 30))}
}

// tlsDrops is every protected packet an endpoint dropped.
func tlsDrops(st erpc.Stats) uint64 {
	return st.TLSOpenFailures + st.TLSReplays + st.TLSUnknownAssoc + st.TLSPlaintextDropped
}

// TestTLSTamperedPackets attacks a live TLS session both ways with
// flipped bits, replays and packets held back past several key updates:
// every call completes with its own answer, no handler runs more often
// than it was called, and each endpoint drops and counts exactly the
// packets injected towards it (a flipped bit anywhere, header included,
// never opens; a replay or an old-key packet never runs).
func TestTLSTamperedPackets(t *testing.T) {
	pki := newTestPKI(t)
	for seed := uint64(1); seed <= 3; seed++ {
		var ran sync.Map
		srv := serverWith(t, "Echo", func(_ context.Context, req []byte) ([]byte, error) {
			if _, dup := ran.LoadOrStore(string(req), true); dup {
				t.Errorf("request %q ran twice", req)
			}
			return req, nil
		})
		str, ctr := tamperUDP(t, seed), tamperUDP(t, seed+100)
		sep := listenT(t, srv, "", erpc.WithTransport(str), erpc.WithTLS(pki.serverTLS()))
		cep := listenT(t, nil, "", erpc.WithTransport(ctr), erpc.WithTLS(pki.clientTLS()))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := cep.Dial(ctx, sep.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		str.mu.Lock()
		str.on = true
		str.mu.Unlock()
		ctr.mu.Lock()
		ctr.on = true
		ctr.mu.Unlock()
		for i := range 600 {
			req := []byte{byte(seed), byte(i), byte(i >> 8)}
			if i%7 == 0 {
				req = append(req, bytes.Repeat([]byte{byte(i)}, 3000)...) // several packets
			}
			resp, err := s.Call(ctx, "Echo", req, nil)
			if err != nil || !bytes.Equal(resp, req) {
				t.Fatalf("seed %d call %d: %v", seed, i, err)
			}
			if i%100 == 50 {
				_ = erpc.ForceKeyUpdate(cep)
				_ = erpc.ForceKeyUpdate(sep)
			}
		}
		str.release()
		ctr.release()
		if _, err := s.Call(ctx, "Echo", []byte("last"), nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "every injected packet to be dropped and counted", func() bool {
			return tlsDrops(sep.Stats()) == uint64(ctr.injected()) && tlsDrops(cep.Stats()) == uint64(str.injected())
		})
		st := sep.Stats()
		if ctr.flips == 0 || ctr.replays == 0 || ctr.delays == 0 || st.TLSKeyUpdates == 0 {
			t.Fatalf("seed %d: injected %d flips, %d replays, %d delayed, %d key updates: the attack did not happen",
				seed, ctr.flips, ctr.replays, ctr.delays, st.TLSKeyUpdates)
		}
		t.Logf("seed %d: to server %d flips %d replays %d delayed; server dropped %d (open %d, replay %d), key updates %d",
			seed, ctr.flips, ctr.replays, ctr.delays, tlsDrops(st), st.TLSOpenFailures, st.TLSReplays, st.TLSKeyUpdates)
		s.Close()
		cancel()
	}
}
