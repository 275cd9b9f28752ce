package erpc_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/netip"
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
	// Handshake-level datagrams sent and received, whole life, and those
	// sent while the attack was on: the handshake's own, not the attack's.
	hsSent, hsRecv, hsLate int
}

func (t *tamperer) PacketSize() int { return t.Transport.(transport.PacketSizer).PacketSize() }

func (t *tamperer) Send(msgs []transport.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []transport.Message
	for _, m := range msgs {
		b := append(append([]byte(nil), m.Head...), m.Payload...)
		if handshakeLevel(b) {
			t.hsSent++
		}
		if !t.on {
			continue
		}
		if b[0] != 0xE9 || b[1]&3 != 2 { // Application packets only: the handshake is done
			if handshakeLevel(b) {
				t.hsLate++
			}
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
	if !t.on {
		return t.Transport.Send(msgs)
	}
	return t.Transport.Send(out)
}

// Receive counts the handshake-level datagrams that arrive.
func (t *tamperer) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	return t.Transport.Receive(func(from netip.AddrPort, data []byte) {
		if handshakeLevel(data) {
			t.mu.Lock()
			t.hsRecv++
			t.mu.Unlock()
		}
		fn(from, data)
	})
}

// handshakeLevel reports whether b is a protected Initial or Handshake
// packet (not an Application one).
func handshakeLevel(b []byte) bool { return len(b) > 1 && b[0] == 0xE9 && b[1]&3 != 2 }

// handshakeArrived reports whether the peer received every handshake
// datagram t sent.
func (t *tamperer) handshakeArrived(peer *tamperer) bool {
	t.mu.Lock()
	sent := t.hsSent
	t.mu.Unlock()
	peer.mu.Lock()
	defer peer.mu.Unlock()
	return peer.hsRecv == sent
}

// release delivers the held-back datagrams (now under old keys).
func (t *tamperer) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delays += len(t.held)
	_ = t.Transport.Send(t.held)
	t.held = nil
}

// droppedAll reports whether drops, counted by the peer since the attack
// began, are what t injected, plus any of t's late handshake datagrams.
func (t *tamperer) droppedAll(drops uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	inj := uint64(t.flips + t.replays + t.delays)
	return drops >= inj && drops <= inj+uint64(t.hsLate)
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
		// The handshake's own datagrams are not the attack: a loaded host
		// resends a flight, and a copy that arrives after its level's keys
		// are gone is dropped and counted as an injected packet is. So the
		// attack starts once each side has received every handshake
		// datagram the other sent and a call queued behind them (behind any
		// handshake step still running) has come back; what was dropped
		// until then is the baseline.
		waitFor(t, "every handshake datagram to arrive", func() bool {
			return str.handshakeArrived(ctr) && ctr.handshakeArrived(str)
		})
		if _, err := s.Call(ctx, "Echo", []byte("first"), nil); err != nil {
			t.Fatal(err)
		}
		sBase, cBase := tlsDrops(sep.Stats()), tlsDrops(cep.Stats())
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
		// Each side drops exactly what was injected towards it, and at
		// most the handshake datagrams its peer sent during the attack
		// (a resent Finished, say: none in practice) besides.
		waitFor(t, "every injected packet to be dropped and counted", func() bool {
			return ctr.droppedAll(tlsDrops(sep.Stats())-sBase) && str.droppedAll(tlsDrops(cep.Stats())-cBase)
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
