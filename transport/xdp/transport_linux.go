//go:build linux

package xdp

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/transport"
	"golang.org/x/sys/unix"
)

var (
	_ transport.Transport   = (*Transport)(nil)
	_ transport.Poller      = (*Transport)(nil)
	_ transport.PacketSizer = (*Transport)(nil)
	_ transport.Targeter    = (*Transport)(nil)
)

// Transport is an AF_XDP transport (Listen). Receive, Send, Wait and Poll
// belong to the event loop; Wake and Close may be called from anywhere.
type Transport struct {
	local        netip.AddrPort
	ifindex      int
	link         macs         // link.src is the interface's MAC; dst is set per frame
	maxDatagram  atomic.Int32 // follows the MTU (checkMTU)
	safeDatagram int          // datagrams up to this size fit any MTU of 1280 or more
	mtuAt        time.Time    // when the MTU was last read
	ifr          *unix.Ifreq  // SIOCGIFMTU's request, kept: reading the MTU allocates nothing
	mode         string

	kernel      int // a kernel UDP socket on local: holds the port, gets what the program passes
	kernelBuf   []byte
	kernelFrom  unix.RawSockaddrAny
	kernelReady bool  // Wait saw the kernel socket readable
	kernelSkip  int   // Receive calls since the kernel socket was read
	nl          *rtnl // the resolver's once it runs
	probe       int   // the resolver's probe socket
	res         *resolver
	neigh       map[netip.Addr]neighEntry // peers' MACs, the loop's
	kernelOut   []byte                    // a datagram sendKernel sends
	kernelTo    rawAddr
	lastFrom    netip.Addr // the last peer whose frame's MAC learn took
	lastMAC     [6]byte
	prog        *attached
	xsks        []*xsk
	efd         int // eventfd: Wake
	pollfds     []unix.PollFd

	stats counters

	woken     atomic.Bool  // a Wake's write to efd is done or under way and not read yet
	busy      atomic.Int32 // calls in progress (loop calls, Wakes), which teardown waits out
	receiving atomic.Bool  // the loop is in Receive: a Close from its fn must not wait for it
	closed    atomic.Bool
	done      atomic.Bool   // teardown begun
	released  chan struct{} // closed when teardown is over
}

// Mode says where the program runs and how the sockets move frames:
// "native/copy", "generic/copy", "native/zerocopy".
func (t *Transport) Mode() string { return t.mode }

// LocalAddr is the address peers send to.
func (t *Transport) LocalAddr() netip.AddrPort { return t.local }

// MaxDatagram is the largest datagram that fits the interface's MTU (and
// a UMEM frame): 1472 bytes over IPv4 on a 1500-byte Ethernet.
// It follows the MTU: Send reads it again (at most every 10 ms) when a
// datagram is larger than what fits an MTU of 1280.
func (t *Transport) MaxDatagram() int { return int(t.maxDatagram.Load()) }

// PacketSize is MaxDatagram: frames are never fragmented.
func (t *Transport) PacketSize() int { return t.MaxDatagram() }

// Target is what peers dial: the transport is UDP on the wire.
func (t *Transport) Target() string { return "udp://" + t.local.String() }

// enter marks a call in progress, or reports that the transport is
// closed; exit ends it, and the last call to end after Close tears the
// transport down (Close itself when nothing is in progress). Close sets
// closed before it reads busy and enter adds to busy before it reads
// closed, so no call that got in is still running at teardown.
func (t *Transport) enter() bool {
	t.busy.Add(1)
	if t.closed.Load() {
		t.exit()
		return false
	}
	return true
}

func (t *Transport) exit() {
	if t.busy.Add(-1) == 0 && t.closed.Load() {
		t.teardown()
	}
}

// Receive passes every datagram in the RX rings to fn. data points into
// the UMEM frame, which goes back to the fill ring after fn returns.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	if !t.enter() {
		return 0, transport.ErrClosed
	}
	t.receiving.Store(true)
	defer func() {
		t.receiving.Store(false)
		t.exit()
	}()
	total := 0
	if len(t.res.answers) > 0 {
		t.takeAnswers()
	}
	if t.kernelSkip++; t.kernelReady || t.kernelSkip >= kernelCheckEvery {
		t.kernelSkip = 0
		k := t.receiveKernel(fn)
		if k > 0 {
			t.stats.kernelReceived.Add(uint64(k))
		}
		total += k
	}
	ring := 0
	for _, x := range t.xsks {
		n := x.rx.available()
		if n == 0 {
			continue
		}
		c, p := *x.rx.consumer, *x.fill.producer
		for i := range n {
			d := x.rx.desc(c + i)
			frame := x.frame(d)
			if from, to, data, ok := parseFrame(frame); ok && to == t.local {
				t.learn(from.Addr(), frame)
				fn(from, data)
				ring++
			}
			// The fill ring has room: it holds at most the RX frames,
			// and this one is not in it.
			*x.fill.addr(p + i) = d.Addr &^ (frameSize - 1)
		}
		x.rx.release(n)
		x.fill.submit(n)
		x.kickFill()
		if bad := int(n) - ring; bad > 0 {
			t.stats.malformed.Add(uint64(bad))
		}
		t.stats.ringReceived.Add(uint64(ring))
		total, ring = total+ring, 0
	}
	return total, nil
}

// Send builds each datagram's frame in a free TX frame, queues them on
// the first socket's TX ring and has the kernel send them. It never waits
// for a MAC: while the resolver asks the kernel for a peer's, datagrams to
// it go through the kernel socket (the kernel queues them while it
// resolves); a datagram to a peer the kernel could not resolve lately, or
// sent while every TX frame is in flight, is dropped.
func (t *Transport) Send(msgs []transport.Message) error {
	if !t.enter() {
		return transport.ErrClosed
	}
	defer t.exit()
	x := t.xsks[0]
	x.reclaim()
	if len(t.res.answers) > 0 {
		t.takeAnswers()
	}
	var err error
	sent, dropped := 0, 0
	now := time.Now()
	for i := range msgs {
		m := &msgs[i]
		if l := m.Len(); l > t.safeDatagram {
			t.checkMTU(now)
			if l > t.MaxDatagram() {
				err = transport.ErrTooLarge
				continue
			}
		}
		to := netip.AddrPortFrom(m.To.Addr().Unmap(), m.To.Port())
		if to.Addr().Is4() != t.local.Addr().Is4() {
			continue // another family: unreachable from here
		}
		mac, ok := t.lookup(to.Addr(), now)
		switch {
		case ok && t.put(x, mac, to, m.Head, m.Payload):
			sent++
		case !ok && t.sendKernel(to, m.Head, m.Payload):
			sent++
		default:
			dropped++
		}
	}
	x.flushTX()
	t.count(sent, dropped)
	return err
}

// put builds a frame to mac and to in a free TX frame and queues it.
func (t *Transport) put(x *xsk, mac [6]byte, to netip.AddrPort, head, payload []byte) bool {
	addr, ok := x.txFrame()
	if !ok {
		return false
	}
	l := t.link
	l.dst = mac
	x.queueTX(addr, buildFrame(x.umem[addr:addr+frameSize], l, t.local, to, head, payload))
	return true
}

// checkMTU reads the interface's MTU again, at most every 10 ms, and
// sets MaxDatagram from it: an MTU lowered after Listen makes Send refuse
// what no longer fits (ErrTooLarge) instead of losing it.
func (t *Transport) checkMTU(now time.Time) {
	if now.Sub(t.mtuAt) < 10*time.Millisecond {
		return
	}
	t.mtuAt = now
	if unix.IoctlIfreq(t.kernel, unix.SIOCGIFMTU, t.ifr) == nil {
		t.maxDatagram.Store(int32(maxDatagramFor(int(t.ifr.Uint32()), t.local.Addr())))
	}
}

// maxDatagramFor is the largest datagram that fits an MTU and a UMEM
// frame.
func maxDatagramFor(mtu int, a netip.Addr) int {
	return min(mtu, frameSize-unix.XDP_PACKET_HEADROOM-ethHeader) - (headerLen(a) - ethHeader)
}

// Poll checks the RX rings up to n times, calling idle between two
// checks: a check is a load of each ring's producer index.
func (t *Transport) Poll(n int, idle func() bool) bool {
	if !t.enter() {
		return true // Receive then says ErrClosed
	}
	defer t.exit()
	for i := range n {
		if t.closed.Load() {
			return true
		}
		for _, x := range t.xsks {
			if x.rx.available() != 0 {
				return true
			}
		}
		if i+1 < n && idle() {
			return false
		}
	}
	return false
}

// Wait sleeps in ppoll on the sockets and the eventfd until a datagram
// arrives, the deadline passes or Wake is called.
func (t *Transport) Wait(deadline time.Time) error {
	if !t.enter() {
		return transport.ErrClosed
	}
	defer t.exit()
	for _, x := range t.xsks {
		if x.rx.available() != 0 {
			return nil
		}
	}
	var ts *unix.Timespec
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		spec := unix.NsecToTimespec(int64(d))
		ts = &spec
	}
	for i := range t.pollfds {
		t.pollfds[i].Revents = 0
	}
	_, err := unix.Ppoll(t.pollfds, ts, nil)
	if err != nil && err != unix.EINTR {
		return err
	}
	if t.pollfds[1].Revents != 0 {
		t.kernelReady = true
	}
	if t.pollfds[0].Revents != 0 {
		// Read, then clear: a Wake between the two finds the flag set and
		// does not write, but this Wait is returning anyway; one after the
		// clear writes again. (Clearing first let a Wake's write be read
		// here with the flag left set: every later Wake was lost.)
		var b [8]byte
		unix.Read(t.efd, b[:])
		t.woken.Store(false)
	}
	if t.closed.Load() {
		return transport.ErrClosed
	}
	return nil
}

// Wake makes a current or next Wait return. Wakes between two Waits write
// the eventfd once. After Close it does nothing: the eventfd stays open
// while a Wake is under way, so Wake never writes into a reused number.
func (t *Transport) Wake() {
	if !t.enter() {
		return
	}
	defer t.exit()
	t.signal()
}

// signal writes the eventfd unless a write is pending. The resolver
// calls it directly: teardown stops the resolver before it closes the
// eventfd (and a resolver's exit must not run the teardown that waits for
// it).
func (t *Transport) signal() {
	if t.woken.Swap(true) {
		return
	}
	one := [8]byte{1}
	unix.Write(t.efd, one[:])
}

// Close detaches the program and releases the sockets and their memory.
// From any goroutine but the loop's, it returns once the loop call in
// progress (a Wait it wakes) has returned and all is released. From the
// loop's own fn, inside Receive, it marks the transport closed and
// returns; the release happens as that Receive returns.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.busy.Add(1) // keep the eventfd open for the write
	one := [8]byte{1}
	unix.Write(t.efd, one[:])
	t.exit()
	for {
		n := t.busy.Load()
		if n == 0 {
			break
		}
		if n == 1 && t.receiving.Load() {
			return nil // called from fn: that Receive's return releases
		}
		time.Sleep(50 * time.Microsecond)
	}
	t.teardown()
	<-t.released // which another call's exit may be doing
	return nil
}

// teardown releases everything open has opened.
func (t *Transport) teardown() {
	if t.done.Swap(true) {
		return
	}
	if t.res != nil {
		t.res.close()
	}
	if t.prog != nil {
		t.prog.close()
	}
	for _, x := range t.xsks {
		x.close()
	}
	if t.nl != nil {
		t.nl.close()
	}
	for _, fd := range []int{t.probe, t.efd, t.kernel} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	close(t.released)
}
