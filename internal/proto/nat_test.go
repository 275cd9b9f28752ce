package proto

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// nat stands in front of one host as a NAT, a multihomed host or a moving
// container does: the host's packets reach the network from an external
// address the nat picks, answers reach the host only at the external
// addresses it has used, and rebind gives it a new one (a new IP, or a new
// port), after which the old ones may stop delivering. The host itself
// never learns its address changed.
type nat struct {
	w       *world
	h       *host
	ip      netip.Addr
	port    uint16
	live    map[netip.AddrPort]bool // external addresses that deliver to h
	ipMoves int                     // rebinds to a new IP
	ptMoves int                     // rebinds to a new port of the same IP
}

func newNAT(w *world, h *host) *nat {
	n := &nat{w: w, h: h, ip: netip.MustParseAddr("172.16.0.1"), port: 40000, live: make(map[netip.AddrPort]bool)}
	w.srcOf, w.route = n.src, n.routeTo
	return n
}

func (n *nat) src(h *host, p uint8) netip.AddrPort {
	if h != n.h {
		return pathAddr(h.addr, p)
	}
	a := netip.AddrPortFrom(n.ip, n.port+uint16(p))
	n.live[a] = true // a mapping opens with its first packet
	return a
}

func (n *nat) routeTo(to netip.AddrPort) *host {
	if n.live[to] {
		return n.h
	}
	if to.Addr() == n.h.addr.Addr() {
		return nil // hidden behind the nat
	}
	return n.w.byAddr[to.Addr()]
}

// rebind moves the host to a new external IP (newIP) or port. With
// keepOld the old mappings still deliver, as a NAT's do until they time out.
func (n *nat) rebind(newIP, keepOld bool) {
	if !keepOld {
		clear(n.live)
	}
	if newIP {
		n.ip = n.ip.Next()
		n.ipMoves++
	} else {
		n.port += 1000
		n.ptMoves++
	}
}

// TestAddressChangeAfterLostAnswer is the reviewer's white-box path: the
// handler runs, the client's address changes before the answer arrives,
// so the answer is lost, and the client's next packet for the call comes
// from a new IP with the right token. The server has that session: it
// must never say the request did not run. The server moves the session to
// the new address, the call completes, and the handler ran exactly once.
func TestAddressChangeAfterLostAnswer(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		w := newWorld(t, seed, simnet.LinkConfig{Delay: time.Duration(10+seed*10) * time.Microsecond})
		srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(seed)})
		cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(seed + 1000)})
		n := newNAT(w, cli)
		runs := 0
		srv.onEvent = func(ev Event) {
			if ev.Type != EventRequest {
				return
			}
			if runs++; runs == 1 {
				n.rebind(true, false) // the answer goes to the old address
			}
			if err := srv.e.Respond(w.now, ev.Req, 0, append([]byte(nil), ev.Req.Data()...)); err != nil {
				t.Fatal(err)
			}
		}
		got := collect(cli)
		srv.e.Tick(w.now)
		w.runFor(Time(seed) * ms) // the server has been up a while
		sid := cli.e.Connect(w.now, srv.addr)
		w.runUntil(Time(time.Second), func() bool { return len(got.up) == 1 })
		id, err := cli.e.StartCall(w.now, sid, 1, []byte("once"), nil, Never, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.runUntil(w.now+Time(10*time.Second), func() bool { _, ok := got.done[id]; return ok })
		ev := got.done[id]
		if n.ipMoves != 1 || runs != 1 {
			t.Fatalf("seed %d: %d address changes, handler ran %d times; want 1 and 1", seed, n.ipMoves, runs)
		}
		if errors.Is(ev.Err, ErrNotExecuted) {
			t.Fatalf("seed %d: the call failed with %v, but its handler ran", seed, ev.Err)
		}
		// The server follows the client to its new address (migrate.go).
		if st := srv.e.Stats(); ev.Err != nil || st.Migrations != 1 {
			t.Fatalf("seed %d: the call ended with %v after %d migrations; want success after 1", seed, ev.Err, st.Migrations)
		}
	}
}
