// Package memnet is an in-process datagram network for erpc-go endpoints:
// the embedded default for demos and for users' own tests (like gRPC's
// bufconn), with the loss, duplication, reordering, delay and bandwidth of
// the simulated network the protocol tests use (internal/simnet), here in
// real time.
//
// Endpoints on the same Network reach each other by address. Addresses are
// assigned from 10.77.0.0/16 unless a name is given: Listen("server") binds
// the name, and Resolve("server") finds it.
package memnet

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/erpc-go/erpc/internal/heapq"
	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/transport"
)

// LinkConfig describes one direction of a link. The zero value is a perfect
// link: no loss, no delay, unlimited bandwidth.
type LinkConfig struct {
	Loss    float64 // probability a datagram is dropped
	Dup     float64 // probability a datagram is delivered twice
	Reorder float64 // probability a datagram is held back by ReorderDelay

	Delay        time.Duration // base one-way delay
	Jitter       time.Duration // extra delay, uniform in [0, Jitter); never reorders
	ReorderDelay time.Duration // extra delay of reordered datagrams

	Bandwidth  float64 // bytes per second; 0 means unlimited
	QueueBytes int     // with Bandwidth: queued bytes beyond which datagrams are dropped; 0 means unbounded

	Down bool // drop everything (a partition)
}

func (c LinkConfig) sim() simnet.LinkConfig { return simnet.LinkConfig(c) }

// Stats counts what a network did.
type Stats struct {
	Sent       uint64 // datagrams handed to the network
	Delivered  uint64 // datagrams a receiver took
	Lost       uint64 // dropped by a link's Loss or a partition
	Duplicated uint64 // delivered twice
	Reordered  uint64 // held back by ReorderDelay
	QueueDrops uint64 // dropped at a bandwidth-limited link's full queue
	Overflows  uint64 // dropped because the receiver's inbox was full (InboxBytes)
}

// InboxBytes bounds what a transport holds for its receiver, like a
// socket's receive buffer: datagrams beyond it are dropped.
const InboxBytes = 8 << 20

// DefaultMaxDatagram is the largest datagram a memnet transport carries.
const DefaultMaxDatagram = 65507

// Network is a set of transports that can reach each other.
type Network struct {
	mu    sync.Mutex
	sim   *simnet.Net
	start time.Time
	hosts map[netip.AddrPort]*Transport
	names map[string]netip.AddrPort
	next  uint32

	delivered, overflows uint64
}

// NewNetwork returns an empty network whose links behave as def, drawing its
// random choices from seed.
func NewNetwork(seed uint64, def LinkConfig) *Network {
	return &Network{
		sim:   simnet.New(seed, def.sim()),
		start: time.Now(),
		hosts: make(map[netip.AddrPort]*Transport),
		names: make(map[string]netip.AddrPort),
	}
}

var defaultNet = NewNetwork(1, LinkConfig{})

// Default is the process-wide network with perfect links that "mem://"
// addresses use.
func Default() *Network { return defaultNet }

// SetLink configures the direction from -> to.
func (n *Network) SetLink(from, to netip.AddrPort, cfg LinkConfig) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sim.SetLink(from, to, cfg.sim())
}

// SetDefault reconfigures every link not set with SetLink.
func (n *Network) SetDefault(cfg LinkConfig) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sim.SetDefault(cfg.sim())
}

// Stats returns what the network did so far.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.sim.Stats()
	return Stats{Sent: s.Sent, Delivered: n.delivered, Lost: s.Lost, Duplicated: s.Duplicated,
		Reordered: s.Reordered, QueueDrops: s.QueueDrops, Overflows: n.overflows}
}

func (n *Network) now() int64 { return int64(time.Since(n.start)) }

// Listen creates a transport on the network. name may be empty (an address
// is assigned), a name to bind ("server"), or an ip:port literal.
func (n *Network) Listen(name string) (*Transport, error) { return n.ListenPaths(name, 1) }

// ListenPaths is Listen for a transport that sends from paths addresses
// (transport.Pather): its own and the next ports of its address. SetLink
// on a path's address (PathAddr) gives that path a link of its own.
func (n *Network) ListenPaths(name string, paths int) (*Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	addr, err := netip.ParseAddrPort(name)
	switch {
	case err == nil:
	case name == "" || name == ":0":
		addr = n.assign()
	default:
		if _, taken := n.names[name]; taken {
			return nil, fmt.Errorf("memnet: name %q is in use", name)
		}
		addr = n.assign()
		n.names[name] = addr
	}
	paths = min(max(paths, 1), 64)
	t := &Transport{net: n, addr: addr, name: name, notify: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	for p := range paths {
		pa := PathAddr(addr, p)
		if _, taken := n.hosts[pa]; taken {
			return nil, fmt.Errorf("memnet: address %v is in use", pa)
		}
		t.paths = append(t.paths, pa)
	}
	t.inbox.Less = arrivesBefore
	t.timer.Stop()
	for _, pa := range t.paths {
		n.hosts[pa] = t
	}
	return t, nil
}

// PathAddr is the address path p of a transport at addr sends from.
func PathAddr(addr netip.AddrPort, p int) netip.AddrPort {
	return netip.AddrPortFrom(addr.Addr(), addr.Port()+uint16(p))
}

// assign picks the next free address in 10.77.0.0/16 (port 1; the ports
// after it are for paths). n.mu is held.
func (n *Network) assign() netip.AddrPort {
	for {
		n.next++
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 77, byte(n.next >> 8), byte(n.next)}), 1)
		if _, taken := n.hosts[a]; !taken {
			return a
		}
	}
}

// Resolve turns a name or an ip:port literal into an address.
func (n *Network) Resolve(name string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(name); err == nil {
		return a, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.names[name]; ok {
		return a, nil
	}
	return netip.AddrPort{}, fmt.Errorf("memnet: no transport named %q", name)
}

type arrival struct {
	from netip.AddrPort
	at   int64
	seq  uint64
	data []byte
}

// Transport is one endpoint's attachment to a Network.
type Transport struct {
	net    *Network
	addr   netip.AddrPort
	paths  []netip.AddrPort // the addresses it sends from, addr first
	name   string
	notify chan struct{} // a datagram was queued, or Wake
	timer  *time.Timer   // owned by the Wait caller

	// Guarded by net.mu.
	inbox   heapq.Heap[arrival] // by arrival time, then queue order
	held    int                 // bytes in inbox
	seq     uint64
	closed  bool
	scratch []arrival
	free    [][]byte
}

var _ transport.Transport = (*Transport)(nil)

// LocalAddr is the transport's address.
func (t *Transport) LocalAddr() netip.AddrPort { return t.addr }

// MaxDatagram is the largest datagram the transport carries.
func (t *Transport) MaxDatagram() int { return DefaultMaxDatagram }

// Paths is how many addresses the transport sends from.
func (t *Transport) Paths() int { return len(t.paths) }

// Target is what a peer on the same network dials to reach the transport:
// "mem://" and its name, or its address if it has none. (erpc's
// package-level Dial of a "mem://" target uses the Default network.)
func (t *Transport) Target() string {
	if t.name != "" && t.name != ":0" {
		if _, err := netip.ParseAddrPort(t.name); err != nil {
			return "mem://" + t.name
		}
	}
	return "mem://" + t.addr.String()
}

// Resolve resolves a name on the transport's network.
func (t *Transport) Resolve(name string) (netip.AddrPort, error) { return t.net.Resolve(name) }

// Send puts datagrams on the network.
func (t *Transport) Send(msgs []transport.Message) error {
	n := t.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if t.closed {
		return transport.ErrClosed
	}
	var err error
	now := n.now()
	for i := range msgs {
		m := &msgs[i]
		if m.Len() > DefaultMaxDatagram {
			err = transport.ErrTooLarge
			continue
		}
		from := t.addr
		if int(m.Path) < len(t.paths) {
			from = t.paths[m.Path]
		}
		dst := n.hosts[m.To]
		at, copies := n.sim.Schedule(now, from, m.To, m.Len())
		if dst == nil || dst.closed {
			continue
		}
		for c := range copies {
			dst.queue(from, at[c], m.Head, m.Payload)
		}
	}
	return err
}

// queue adds a datagram to t's inbox and signals its Wait. n.mu is held.
func (t *Transport) queue(from netip.AddrPort, at int64, head, payload []byte) {
	if size := len(head) + len(payload); t.held+size > InboxBytes {
		t.net.overflows++
		return
	} else {
		t.held += size
	}
	var buf []byte
	if k := len(t.free); k > 0 {
		buf, t.free = t.free[k-1][:0], t.free[:k-1]
	}
	buf = append(append(buf, head...), payload...)
	t.seq++
	t.inbox.Push(arrival{from: from, at: at, seq: t.seq, data: buf})
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Receive delivers the datagrams that have arrived by now.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	n := t.net
	n.mu.Lock()
	if t.closed {
		n.mu.Unlock()
		return 0, transport.ErrClosed
	}
	now := n.now()
	due := t.scratch[:0]
	for t.inbox.Len() > 0 && t.inbox.Peek().at <= now {
		a := t.inbox.Pop()
		t.held -= len(a.data)
		due = append(due, a)
	}
	n.delivered += uint64(len(due))
	n.mu.Unlock()
	for _, a := range due {
		fn(a.from, a.data)
	}
	n.mu.Lock()
	for i := range due {
		if len(t.free) < maxFree {
			t.free = append(t.free, due[i].data)
		}
		due[i] = arrival{}
	}
	t.scratch = due[:0]
	n.mu.Unlock()
	return len(due), nil
}

// Wait blocks until the next datagram is due, deadline passes or Wake.
func (t *Transport) Wait(deadline time.Time) error {
	n := t.net
	n.mu.Lock()
	if t.closed {
		n.mu.Unlock()
		return transport.ErrClosed
	}
	next := time.Duration(simnet.Never)
	if t.inbox.Len() > 0 {
		next = time.Duration(t.inbox.Peek().at - n.now())
	}
	n.mu.Unlock()
	if !deadline.IsZero() {
		next = min(next, time.Until(deadline))
	}
	if next <= 0 {
		return nil
	}
	if next < time.Duration(simnet.Never) {
		t.timer.Reset(next)
		defer t.timer.Stop()
	}
	select {
	case <-t.notify:
	case <-t.timer.C:
	}
	if t.isClosed() {
		return transport.ErrClosed
	}
	return nil
}

func (t *Transport) isClosed() bool {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	return t.closed
}

// Wake ends a current or next Wait.
func (t *Transport) Wake() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// Close detaches the transport from the network.
func (t *Transport) Close() error {
	n := t.net
	n.mu.Lock()
	if !t.closed {
		t.closed = true
		for _, pa := range t.paths {
			delete(n.hosts, pa)
		}
		if t.name != "" && n.names[t.name] == t.addr {
			delete(n.names, t.name)
		}
		t.inbox.Clear()
		t.held = 0
	}
	n.mu.Unlock()
	t.Wake()
	return nil
}

// maxFree bounds the datagram buffers a transport keeps for reuse.
const maxFree = 256

func arrivesBefore(a, b *arrival) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}
