package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// faultRelay is a man in the middle on loopback between one client and a
// server: the client dials front; the relay forwards through an upstream
// socket that it replaces now and then (the client's address changes, as
// behind a rebinding NAT), and on every datagram both ways, handshake
// included, it injects seeded faults: loss, duplication, reordering
// (held back behind later ones), and late copies of old datagrams, which
// after a move it sends from the old address (a forger where the client
// was). Every fault is counted.
type faultRelay struct {
	front  *net.UDPConn
	server *net.UDPAddr
	mu     sync.Mutex
	rng    *rand.Rand
	client *net.UDPAddr
	up     *net.UDPConn
	old    []*net.UDPConn
	held   [2][]byte // per direction
	seen   [][]byte  // client datagrams, for late copies
	counts struct{ lost, dup, reordered, late, lateFromOld, moves int }
	done   chan struct{}
	wg     sync.WaitGroup
	// drop, when set, replaces the random faults: it says whether to drop
	// a datagram (dir 0 from the client, 1 from the server).
	drop    func(dir int, b []byte) bool
	dropped int
}

func newFaultRelay(t *testing.T, server netip.AddrPort, seed uint64) *faultRelay {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRelay{front: front, server: net.UDPAddrFromAddrPort(server), rng: rand.New(rand.NewPCG(seed, 5)), done: make(chan struct{})}
	r.move(t)
	r.wg.Add(1)
	go r.fromClient()
	t.Cleanup(r.close)
	return r
}

func (r *faultRelay) addr() string { return r.front.LocalAddr().String() }

func (r *faultRelay) close() {
	close(r.done)
	r.front.Close()
	r.mu.Lock()
	r.up.Close()
	for _, o := range r.old {
		o.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// move gives the client a new address towards the server.
func (r *faultRelay) move(t *testing.T) {
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	if r.up != nil {
		r.old = append(r.old, r.up)
		r.counts.moves++
	}
	r.up = up
	r.mu.Unlock()
	r.wg.Add(1)
	go r.fromServer(up)
}

// fault decides a datagram's fate (under mu) and returns what to send now.
func (r *faultRelay) fault(dir int, b []byte) [][]byte {
	if r.drop != nil {
		if r.drop(dir, b) {
			r.dropped++
			return nil
		}
		return [][]byte{b}
	}
	switch x := r.rng.IntN(100); {
	case x < 3:
		r.counts.lost++
		return nil
	case x < 6:
		r.counts.dup++
		return [][]byte{b, b}
	case x < 11 && r.held[dir] == nil:
		r.counts.reordered++
		r.held[dir] = b
		return nil
	}
	out := [][]byte{b}
	if h := r.held[dir]; h != nil {
		out = append(out, h)
		r.held[dir] = nil
	}
	return out
}

func (r *faultRelay) fromClient() {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, from, err := r.front.ReadFromUDP(buf)
		if err != nil {
			return
		}
		b := append([]byte(nil), buf[:n]...)
		r.mu.Lock()
		r.client = from
		out := r.fault(0, b)
		up := r.up
		var late []byte
		var lateOld *net.UDPConn
		if len(r.seen) < 4096 {
			r.seen = append(r.seen, b)
		} else {
			r.seen[r.rng.IntN(len(r.seen))] = b
		}
		if r.drop == nil && r.rng.IntN(100) == 0 { // a late copy of something old
			late = r.seen[r.rng.IntN(len(r.seen))]
			r.counts.late++
			if len(r.old) > 0 && r.rng.IntN(2) == 0 {
				lateOld = r.old[r.rng.IntN(len(r.old))]
				r.counts.lateFromOld++
			}
		}
		r.mu.Unlock()
		for _, d := range out {
			_, _ = up.WriteToUDP(d, r.server)
		}
		if late != nil {
			if lateOld != nil {
				_, _ = lateOld.WriteToUDP(late, r.server)
			} else {
				_, _ = up.WriteToUDP(late, r.server)
			}
		}
	}
}

func (r *faultRelay) fromServer(up *net.UDPConn) {
	defer r.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, _, err := up.ReadFromUDP(buf)
		if err != nil {
			return
		}
		b := append([]byte(nil), buf[:n]...)
		r.mu.Lock()
		out := r.fault(1, b)
		to := r.client
		r.mu.Unlock()
		for _, d := range out {
			_, _ = r.front.WriteToUDP(d, to)
		}
	}
}

// TestReviewTLSRelayFaults: promise (issue 30, WithTLS): TLS sessions
// lose nothing under loss, duplication, reordering, late copies and
// client address changes, and no handler runs twice. Through
// faultRelay (every datagram, the handshake's too), with the client
// moving to a new address every 40 calls and a forger replaying old
// datagrams from the addresses it left, a TLS client makes 240 calls of
// 1 B to 20 KB and two of 4 MiB; each must return its own answer, each
// handler must run once, and the server must have dropped replays.
func TestReviewTLSRelayFaults(t *testing.T) {
	pki := newTestPKI(t)
	for seed := uint64(1); seed <= 2; seed++ {
		var mu sync.Mutex
		runs := map[uint32]int{}
		srv := serverWith(t, "Echo", func(_ context.Context, req []byte) ([]byte, error) {
			mu.Lock()
			runs[binary.LittleEndian.Uint32(req)]++
			mu.Unlock()
			return req, nil
		})
		sep := listenT(t, srv, "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
		relay := newFaultRelay(t, sep.Addr(), seed)
		cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		s, err := cep.Dial(ctx, relay.addr())
		if err != nil {
			t.Fatalf("seed %d: dial through the relay: %v", seed, err)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		sizes := []int{}
		for i := range 240 {
			sizes = append(sizes, 4+rng.IntN(20000)*(i%2))
		}
		sizes = append(sizes[:120], append([]int{4 << 20}, append(sizes[120:], 4<<20)...)...)
		for i, n := range sizes {
			if i > 0 && i%40 == 0 {
				relay.move(t)
			}
			req := make([]byte, n)
			for j := 4; j < n; j += 97 {
				req[j] = byte(rng.Uint32())
			}
			binary.LittleEndian.PutUint32(req, uint32(i))
			resp, err := s.Call(ctx, "Echo", req, nil)
			if err != nil || !bytes.Equal(resp, req) {
				relay.mu.Lock()
				c := relay.counts
				relay.mu.Unlock()
				t.Fatalf("seed %d call %d (%d B): %v (answer ok %v); faults so far %+v; server %+v",
					seed, i, n, err, bytes.Equal(resp, req), c, sep.Stats())
			}
		}
		s.Close()
		cancel()
		mu.Lock()
		for id, k := range runs {
			if k != 1 {
				t.Errorf("seed %d: request %d ran %d times", seed, id, k)
			}
		}
		mu.Unlock()
		relay.mu.Lock()
		c := relay.counts
		relay.mu.Unlock()
		st := sep.Stats()
		if c.lost == 0 || c.dup == 0 || c.reordered == 0 || c.late == 0 || c.lateFromOld == 0 || c.moves == 0 || st.TLSReplays == 0 {
			t.Fatalf("seed %d: faults %+v, server replays dropped %d: the attack did not happen", seed, c, st.TLSReplays)
		}
		t.Logf("seed %d: faults %+v; server: replays %d, open failures %d, handshakes %d", seed, c, st.TLSReplays, st.TLSOpenFailures, st.TLSHandshakes)
	}
}
