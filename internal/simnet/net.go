package simnet

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/internal/heapq"
)

// Never is returned by Next when nothing is in flight.
const Never = math.MaxInt64

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

// Datagram is a datagram in flight or delivered.
type Datagram struct {
	From, To netip.AddrPort
	Data     []byte
	At       int64 // arrival time
	seq      uint64
}

// Stats counts what the network did.
type Stats struct {
	Sent, Delivered, Lost, Duplicated, Reordered, QueueDrops uint64
}

type linkKey struct{ from, to netip.AddrPort }

type link struct {
	cfg         LinkConfig
	busyUntil   int64 // when the link finishes sending what it has queued
	lastArrival int64 // a link is FIFO: jitter delays but does not reorder
}

// ingress is a shared bottleneck in front of one host: the switch port
// toward it, which every sender's datagrams queue for.
type ingress struct {
	bandwidth float64 // bytes per second
	limit     float64 // queued bytes beyond which datagrams are dropped; 0: unbounded
	busyUntil int64
	stats     IngressStats
}

// IngressStats counts what a host's ingress bottleneck did.
type IngressStats struct {
	Bytes    uint64  // delivered through it
	Drops    uint64  // dropped because its queue was full
	MaxQueue float64 // the most bytes that waited in its queue
}

// Net is a simulated network. It is not safe for concurrent use.
type Net struct {
	rng     *rand.Rand
	def     LinkConfig
	links   map[linkKey]*link
	ingress map[netip.Addr]*ingress
	q       heapq.Heap[Datagram] // in flight, by arrival then send order
	seq     uint64
	free    [][]byte
	stats   Stats
}

// New returns a network whose links default to def, with all randomness
// drawn from seed.
func New(seed uint64, def LinkConfig) *Net {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	n := &Net{rng: rand.New(rand.NewChaCha8(s)), def: def, links: make(map[linkKey]*link)}
	n.q.Less = datagramBefore
	return n
}

// SetLink configures the direction from -> to.
func (n *Net) SetLink(from, to netip.AddrPort, cfg LinkConfig) { n.link(from, to).cfg = cfg }

// SetDefault changes the configuration of every link not set with SetLink.
func (n *Net) SetDefault(cfg LinkConfig) {
	n.def = cfg
	for _, l := range n.links {
		l.cfg = cfg
	}
}

// SetIngress puts a bottleneck of bandwidth bytes per second, with a queue
// of queueBytes (0: unbounded), in front of every port of host: the
// switch port toward it, shared by all senders (incast). A datagram joins
// its queue when it reaches the end of its link; the queue is FIFO in the
// order datagrams are scheduled, which is arrival order when the links
// toward host have equal delays and no jitter.
func (n *Net) SetIngress(host netip.Addr, bandwidth float64, queueBytes int) {
	if n.ingress == nil {
		n.ingress = make(map[netip.Addr]*ingress)
	}
	n.ingress[host] = &ingress{bandwidth: bandwidth, limit: float64(queueBytes)}
}

// Ingress returns the counters of host's ingress bottleneck.
func (n *Net) Ingress(host netip.Addr) IngressStats {
	if in := n.ingress[host]; in != nil {
		return in.stats
	}
	return IngressStats{}
}

// ResetIngress zeroes the counters of host's ingress bottleneck (after a
// warm-up, say), keeping its queue.
func (n *Net) ResetIngress(host netip.Addr) {
	if in := n.ingress[host]; in != nil {
		in.stats = IngressStats{}
	}
}

// Link returns the configuration of from -> to.
func (n *Net) Link(from, to netip.AddrPort) LinkConfig { return n.link(from, to).cfg }

func (n *Net) link(from, to netip.AddrPort) *link {
	k := linkKey{from, to}
	l := n.links[k]
	if l == nil {
		l = &link{cfg: n.def}
		n.links[k] = l
	}
	return l
}

// Stats returns the counters so far.
func (n *Net) Stats() Stats { return n.stats }

// Send puts the concatenation of parts on the link from -> to at time now.
// The bytes are copied.
func (n *Net) Send(now int64, from, to netip.AddrPort, parts ...[]byte) {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	at, copies := n.Schedule(now, from, to, size)
	for i := range copies {
		n.push(from, to, at[i], size, parts)
	}
}

// Schedule decides the fate of a datagram of size bytes sent on from -> to
// at time now, as Send would, and returns the arrival times of the copies
// that will arrive: none if it is lost, two if it is duplicated. It lets a
// caller with its own queues (transport/memnet) use the link model.
func (n *Net) Schedule(now int64, from, to netip.AddrPort, size int) (at [2]int64, copies int) {
	n.stats.Sent++
	l := n.link(from, to)
	c := &l.cfg
	if c.Down || n.chance(c.Loss) {
		n.stats.Lost++
		return at, 0
	}
	depart := now
	if c.Bandwidth > 0 {
		start := max(now, l.busyUntil)
		if c.QueueBytes > 0 && float64(start-now)*c.Bandwidth/1e9 > float64(c.QueueBytes) {
			n.stats.QueueDrops++
			return at, 0
		}
		depart = start + int64(float64(size)/c.Bandwidth*1e9)
		l.busyUntil = depart
	}
	n2 := 1
	if n.chance(c.Dup) {
		n2 = 2
		n.stats.Duplicated++
	}
	in := n.ingress[to.Addr()]
	for range n2 {
		t := depart + int64(c.Delay)
		if c.Jitter > 0 {
			t += n.rng.Int64N(int64(c.Jitter))
		}
		if n.chance(c.Reorder) {
			t += int64(c.ReorderDelay)
			n.stats.Reordered++
		} else {
			t = max(t, l.lastArrival)
			l.lastArrival = t
		}
		if in != nil {
			var ok bool
			if t, ok = in.pass(t, size); !ok {
				n.stats.QueueDrops++
				continue
			}
		}
		at[copies] = t
		copies++
	}
	return at, copies
}

// pass queues a datagram of size bytes that reaches the bottleneck at t,
// and returns when it leaves, or false if the queue is full.
func (in *ingress) pass(t int64, size int) (int64, bool) {
	start := max(t, in.busyUntil)
	queued := float64(start-t) * in.bandwidth / 1e9
	if in.limit > 0 && queued+float64(size) > in.limit {
		in.stats.Drops++
		return 0, false
	}
	in.stats.MaxQueue = max(in.stats.MaxQueue, queued)
	in.stats.Bytes += uint64(size)
	in.busyUntil = start + int64(float64(size)/in.bandwidth*1e9)
	return in.busyUntil, true
}

func (n *Net) chance(p float64) bool { return p > 0 && n.rng.Float64() < p }

func (n *Net) push(from, to netip.AddrPort, at int64, size int, parts [][]byte) {
	var buf []byte
	if k := len(n.free); k > 0 && cap(n.free[k-1]) >= size {
		buf = n.free[k-1][:0]
		n.free = n.free[:k-1]
	} else {
		buf = make([]byte, 0, max(size, 2048))
	}
	for _, p := range parts {
		buf = append(buf, p...)
	}
	n.seq++
	n.q.Push(Datagram{From: from, To: to, Data: buf, At: at, seq: n.seq})
}

// Next is the arrival time of the earliest datagram in flight, or Never.
func (n *Net) Next() int64 {
	if n.q.Len() == 0 {
		return Never
	}
	return n.q.Peek().At
}

// Pop returns the earliest datagram that has arrived by now. Its Data
// belongs to the caller until it calls Release.
func (n *Net) Pop(now int64) (Datagram, bool) {
	if n.q.Len() == 0 || n.q.Peek().At > now {
		return Datagram{}, false
	}
	n.stats.Delivered++
	return n.q.Pop(), true
}

// Release gives a delivered datagram's buffer back for reuse.
func (n *Net) Release(d Datagram) { n.free = append(n.free, d.Data) }

// InFlight is the number of datagrams not yet delivered.
func (n *Net) InFlight() int { return n.q.Len() }

func datagramBefore(a, b *Datagram) bool {
	return a.At < b.At || (a.At == b.At && a.seq < b.seq)
}
