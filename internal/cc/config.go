package cc

import "time"

// MaxPaths is the largest number of paths a Controller drives (the engine's
// Config.Paths is capped at the same value).
const MaxPaths = 64

// inlinePaths is how many paths live inside the Controller value; more are
// allocated once, by Init.
const inlinePaths = 2 // one path, or two: a client session keeps them in its own memory

// Config holds the controller's constants. The zero value of every field
// means "use the default"; the defaults and the reasons for them are in the
// package documentation.
type Config struct {
	// MaxWindow is the largest window, in packets: the session's credits.
	// Default 32.
	MaxWindow float64
	// MinWindow is the smallest window, in packets. Below one packet the
	// session is paced at one packet per RTT/window. Default 0.1, which is
	// also FlowScaleMin's.
	MinWindow float64

	// InitialWindow is the window a session starts with, in slow start
	// (doubling per RTT until the delay first exceeds the target or the
	// window reaches MaxWindow). Default 2.
	InitialWindow float64

	// AI is the additive increase, in packets per RTT. Default 1.
	AI float64
	// Beta scales the multiplicative decrease: a cut multiplies the window
	// by 1 - Beta*(delay-base)/delay, taking Beta of the session's packets
	// out of the queue. Default 0.8.
	Beta float64
	// MaxMDF bounds one cut: the window never shrinks by more than this
	// fraction at once, and at most once per RTT. Default 0.5.
	MaxMDF float64

	// QueueFrac and QueueFloor set the queueing delay the window tolerates
	// on top of the base RTT before it is cut: max(QueueFloor,
	// QueueFrac*base). Defaults 0.25 and 10 µs.
	QueueFrac  float64
	QueueFloor time.Duration

	// LinkPackets is the link floor of the tolerated queueing, in full
	// packets at the path's bottleneck rate (packet-pair estimate): on a
	// slow link, where one packet takes longer to cross than QueueFloor,
	// a queue of one or two of the session's own packets is how the link
	// is kept busy, not congestion. Default 2. LinkFloorMax caps it
	// (default 5 ms: two full packets at 5 Mbit/s).
	LinkPackets  float64
	LinkFloorMax time.Duration

	// FlowScale is Swift's flow-scaling range, as a multiple of the
	// tolerated queueing: the target grows by up to FlowScale times it as
	// the window shrinks from FlowScaleMax to FlowScaleMin packets
	// (Swift's a/sqrt(cwnd)+b), so that a smaller window tolerates a
	// deeper queue, which is what brings many small windows to fair
	// shares. Defaults 5, 0.1 and MaxWindow.
	FlowScale    float64
	FlowScaleMin float64
	FlowScaleMax float64

	// BaseWindow is how long a minimum RTT sample stays the base RTT
	// unless a lower one replaces it. Default 10 s.
	BaseWindow time.Duration
	// SeedFor is how long a sample given to ObserveBase (the handshake's)
	// takes part in the base RTT: long enough for an incast to converge,
	// short enough that a path whose full-size packets take much longer
	// than the handshake's tiny ones to cross (a slow link: serialization,
	// not queueing) soon has a base measured with data.
	SeedFor time.Duration
	// MinRTT is the smallest plausible sample; lower ones (clock or
	// hold-time artifacts) are ignored. Default 500 ns.
	MinRTT time.Duration

	// PacketSize is the size, in bytes, of a full packet: the pacer charges
	// a packet bytes/PacketSize of a window slot. Default 1472.
	PacketSize int

	// SuspectAfter is the number of consecutive timeouts on a path (no
	// acknowledgement on it in between) after which the path is suspect:
	// not chosen while another is usable. Default 2.
	SuspectAfter int
	// SuspectFor is how long a path stays suspect the first time; it
	// doubles with every further timeout, up to SuspectMax. Defaults 10 ms
	// and 1 s.
	SuspectFor, SuspectMax time.Duration

	// RoundRobin sprays packets over the paths in turn, blind to their
	// delay (the benchmark's erpc-spray system) though not to failures
	// (suspect paths are skipped), and cuts the window on the latest
	// sample of any path, as one-path Swift does.
	RoundRobin bool
}

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if !(*v > 0) {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxWindow, 32)
	def(&c.MinWindow, 0.1)
	c.MinWindow = min(c.MinWindow, c.MaxWindow)
	def(&c.InitialWindow, 2)
	c.InitialWindow = min(max(c.InitialWindow, c.MinWindow), c.MaxWindow)
	def(&c.AI, 1)
	def(&c.Beta, 0.8)
	def(&c.MaxMDF, 0.5)
	c.MaxMDF = min(c.MaxMDF, 1)
	def(&c.QueueFrac, 0.25)
	defDur(&c.QueueFloor, 10*time.Microsecond)
	def(&c.LinkPackets, 2)
	defDur(&c.LinkFloorMax, 5*time.Millisecond)
	def(&c.FlowScale, 5)
	def(&c.FlowScaleMin, 0.1)
	def(&c.FlowScaleMax, c.MaxWindow)
	if c.FlowScaleMin >= c.FlowScaleMax {
		c.FlowScaleMin = c.FlowScaleMax / 2
	}
	defDur(&c.BaseWindow, 10*time.Second)
	defDur(&c.SeedFor, 50*time.Millisecond)
	defDur(&c.MinRTT, 500*time.Nanosecond)
	if c.PacketSize <= 0 {
		c.PacketSize = 1472
	}
	if c.SuspectAfter <= 0 {
		c.SuspectAfter = 2
	}
	defDur(&c.SuspectFor, 10*time.Millisecond)
	defDur(&c.SuspectMax, time.Second)
	return c
}
