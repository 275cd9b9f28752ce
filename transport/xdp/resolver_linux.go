//go:build linux

package xdp

import (
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Timing of the resolver.
const (
	// resolveLimit is how long the resolver waits for the kernel to
	// resolve a next hop it had no MAC for.
	resolveLimit = time.Second
	// checkLimit is how long it waits for the kernel's unicast probes of
	// a MAC it holds (3 probes a second apart by default).
	checkLimit = 4 * time.Second
	// recheckEvery is how often the MAC of a next hop in use is checked
	// with those probes: the kernel checks an entry only when it sends
	// through it itself, and AF_XDP bypasses it, so a peer whose MAC
	// changed (a replaced host keeping its IP) would otherwise be sent to
	// at its old MAC for as long as the entry lives.
	recheckEvery = 15 * time.Second
	// tick is how often the resolver looks for peers to check again;
	// inUse is how long after the loop's last ask a peer is kept checked.
	tick  = time.Second
	inUse = 2 * neighTTL
)

// neighAnswer is the resolver's word on a peer: the MAC of its next hop,
// or none (ok false). direct says the peer is its own next hop (on the
// link), so that frames from it tell its MAC.
type neighAnswer struct {
	ip     netip.Addr
	hop    netip.Addr
	mac    [6]byte
	ok     bool
	direct bool
}

// peerWatch is what the resolver keeps of a peer the loop asked about.
type peerWatch struct {
	mac   [6]byte
	ok    bool
	hop   netip.Addr
	asked time.Time // the loop's last ask
}

// resolver is a goroutine that owns the netlink socket and the probe
// socket and answers the loop's questions about peers' MACs, so that the
// loop never waits for the kernel's ARP or NDP. The loop asks through
// asks (never blocking: a full channel makes it ask again later) and
// takes answers from answers, and resolver wakes it after each. It also
// checks the peers in use again every recheckEvery and answers unasked
// when a MAC changed or was lost.
type resolver struct {
	nl      *rtnl
	ifindex int
	probe   int // a UDP socket whose datagrams to port 9 make the kernel resolve a MAC
	asks    chan netip.Addr
	answers chan neighAnswer
	stop    chan struct{}
	done    chan struct{}
	stopped atomic.Bool
	wake    func()
	peers   map[netip.Addr]peerWatch
	checked map[netip.Addr]time.Time // when each next hop's MAC was last checked
	to      rawAddr
}

func newResolver(nl *rtnl, ifindex, probe int, wake func()) *resolver {
	return &resolver{
		nl: nl, ifindex: ifindex, probe: probe, wake: wake,
		asks:    make(chan netip.Addr, 64),
		answers: make(chan neighAnswer, 64),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		peers:   map[netip.Addr]peerWatch{},
		checked: map[netip.Addr]time.Time{},
	}
}

// close stops the goroutine and waits for it: it uses the sockets, which
// the caller closes next.
func (r *resolver) close() {
	r.stopped.Store(true)
	close(r.stop)
	<-r.done
}

func (r *resolver) run() {
	defer close(r.done)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-r.stop:
			return
		case ip := <-r.asks:
			w := r.peers[ip]
			w.asked = time.Now()
			a := r.resolve(ip)
			w.mac, w.ok, w.hop = a.mac, a.ok, a.hop
			r.peers[ip] = w
			if !r.answer(a) {
				return
			}
		case now := <-ticker.C:
			for ip, w := range r.peers {
				if now.Sub(w.asked) > inUse {
					delete(r.peers, ip)
					continue
				}
				// Only MACs due for a check: a failed peer is asked
				// about again by the loop, after its backoff.
				if !w.ok || now.Sub(r.checked[w.hop]) < recheckEvery {
					continue
				}
				a := r.resolve(ip)
				if a.ok == w.ok && a.mac == w.mac {
					continue
				}
				w.mac, w.ok, w.hop = a.mac, a.ok, a.hop
				r.peers[ip] = w
				if !r.answer(a) {
					return
				}
			}
		}
	}
}

// answer hands a to the loop and wakes it; false when stopped.
func (r *resolver) answer(a neighAnswer) bool {
	select {
	case r.answers <- a:
		r.wake()
		return true
	case <-r.stop:
		return false
	}
}

// resolve finds the MAC of ip's next hop in the kernel's neighbour table.
// A MAC not checked within recheckEvery is checked first: the entry is
// set to PROBE, and the kernel asks that MAC with unicast probes; it
// marks the entry REACHABLE if it answers, FAILED if not. When the table
// has no usable MAC, a datagram to the next hop's discard port (9) from
// the probe socket makes the kernel resolve it, and resolve waits up to
// resolveLimit for the answer.
func (r *resolver) resolve(ip netip.Addr) neighAnswer {
	a := neighAnswer{ip: ip}
	hop, err := r.nl.nextHop(r.ifindex, ip)
	if err != nil {
		return a
	}
	a.hop, a.direct = hop, hop == ip
	mac, state, ok, _ := r.nl.neighbour(r.ifindex, hop)
	if ok && state&(unix.NUD_PERMANENT|unix.NUD_NOARP) == 0 && time.Since(r.checked[hop]) >= recheckEvery {
		r.checked[hop] = time.Now()
		if r.nl.setNeighbourState(r.ifindex, hop, mac, unix.NUD_PROBE) == nil {
			mac, ok = r.await(hop, checkLimit)
		}
	}
	if !ok {
		r.kernelResolve(hop)
		mac, ok = r.await(hop, resolveLimit)
	}
	a.mac, a.ok = mac, ok
	return a
}

// await reads hop's entry until the kernel has settled it: a MAC it
// confirmed (REACHABLE, STALE after an update, or one it does not check),
// FAILED or gone, or until limit has passed (then a usable MAC is taken
// as it is).
func (r *resolver) await(hop netip.Addr, limit time.Duration) (mac [6]byte, ok bool) {
	const settled = unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_PERMANENT | unix.NUD_NOARP | unix.NUD_FAILED
	const underway = unix.NUD_INCOMPLETE | unix.NUD_PROBE | unix.NUD_DELAY
	deadline := time.Now().Add(limit)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		var state uint16
		var err error
		mac, state, ok, err = r.nl.neighbour(r.ifindex, hop)
		if err != nil || state&settled != 0 || state&underway == 0 || !time.Now().Before(deadline) || r.stopped.Load() {
			return mac, ok && state&unix.NUD_FAILED == 0
		}
		time.Sleep(wait)
	}
}

// kernelResolve sends an empty datagram to hop's discard port through the
// kernel, which resolves hop's MAC to send it.
func (r *resolver) kernelResolve(hop netip.Addr) {
	p, n := r.to.set(netip.AddrPortFrom(hop, 9))
	var empty byte
	unix.Syscall6(unix.SYS_SENDTO, uintptr(r.probe), uintptr(unsafe.Pointer(&empty)), 0, 0, uintptr(p), n)
}
