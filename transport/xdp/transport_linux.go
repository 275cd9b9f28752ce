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
	local       netip.AddrPort
	ifindex     int
	link        macs // link.src is the interface's MAC; dst is set per frame
	maxDatagram int
	mode        string

	kernel      int // a kernel UDP socket on local: holds the port, gets what the program passes
	kernelBuf   []byte
	kernelFrom  unix.RawSockaddrAny
	kernelReady bool // Wait saw the kernel socket readable
	kernelSkip  int  // Receive calls since the kernel socket was read
	nl          *rtnl
	probe       int // a UDP socket whose datagrams to port 9 make the kernel resolve a MAC
	neigh       map[netip.Addr]neighEntry
	prog        *attached
	xsks        []*xsk
	efd         int // eventfd: Wake
	pollfds     []unix.PollFd

	stats counters

	woken     atomic.Bool  // a Wake's write to efd is done or under way and not read yet
	busy      atomic.Int32 // calls in progress (loop calls, Wakes), which teardown waits out
	receiving atomic.Bool  // the loop is in Receive: a Close from its fn must not wait for it
	closed    atomic.Bool
	done      atomic.Bool // torn down
}

// Mode says where the program runs and how the sockets move frames:
// "native/copy", "generic/copy", "native/zerocopy".
func (t *Transport) Mode() string { return t.mode }

// LocalAddr is the address peers send to.
func (t *Transport) LocalAddr() netip.AddrPort { return t.local }

// MaxDatagram is the largest datagram that fits the interface's MTU (and
// a UMEM frame): 1472 bytes over IPv4 on a 1500-byte Ethernet.
func (t *Transport) MaxDatagram() int { return t.maxDatagram }

// PacketSize is MaxDatagram: frames are never fragmented.
func (t *Transport) PacketSize() int { return t.maxDatagram }

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
			if from, to, data, ok := parseFrame(x.frame(d)); ok && to == t.local {
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
// the first socket's TX ring and has the kernel send them. A datagram to
// a peer whose MAC the kernel cannot resolve within a second, or sent
// while every TX frame is in flight, is dropped.
func (t *Transport) Send(msgs []transport.Message) error {
	if !t.enter() {
		return transport.ErrClosed
	}
	defer t.exit()
	x := t.xsks[0]
	x.reclaim()
	var err error
	queued, sent, dropped := uint32(0), 0, 0
	p := *x.tx.producer
	for i := range msgs {
		m := &msgs[i]
		if m.Len() > t.maxDatagram {
			err = transport.ErrTooLarge
			continue
		}
		to := netip.AddrPortFrom(m.To.Addr().Unmap(), m.To.Port())
		if to.Addr().Is4() != t.local.Addr().Is4() {
			continue // another family: unreachable from here
		}
		mac, ok := t.resolve(to.Addr())
		if !ok {
			dropped++
			continue
		}
		if len(x.txFree) == 0 {
			x.tx.submit(queued)
			p, queued = p+queued, 0
			x.kickTX()
			if len(x.txFree) == 0 {
				dropped++ // every frame in flight: as a full NIC queue would
				continue
			}
		}
		addr := x.txFree[len(x.txFree)-1]
		x.txFree = x.txFree[:len(x.txFree)-1]
		l := t.link
		l.dst = mac
		n := buildFrame(x.umem[addr:addr+frameSize], l, t.local, to, m.Head, m.Payload)
		*x.tx.desc(p + queued) = unix.XDPDesc{Addr: addr, Len: uint32(n)}
		queued++
		sent++
	}
	if queued > 0 {
		x.tx.submit(queued)
		x.kickTX()
	}
	if sent > 0 {
		t.stats.sent.Add(uint64(sent))
	}
	if dropped > 0 {
		t.stats.dropped.Add(uint64(dropped))
	}
	return err
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
		if n == 0 || (n == 1 && t.receiving.Load()) {
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	if t.busy.Load() == 0 {
		t.teardown()
	}
	return nil
}

// teardown releases everything open has opened.
func (t *Transport) teardown() {
	if t.done.Swap(true) {
		return
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
}
