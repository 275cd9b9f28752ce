package cc

import (
	"math"
	"time"
)

// silentTimeouts is how many timeouts in a row, with no acknowledgement at
// all in between, cut the window although the delay does not say
// congestion: with no sample coming back the delay signal is blind, and
// silence is not what random loss looks like.
const silentTimeouts = 3

// slowStartPacing is the pacing gain in slow start, where the window
// doubles every RTT: pacing at the window's own rate would hold the growth
// back (Linux paces slow start at 2x for the same reason).
const slowStartPacing = 2

// pairEvery: one paced packet in pairEvery is followed at once by the
// next, unpaced and even one over the window (Allowed), so that the
// bottleneck spaces the two: a packet-pair probe of the path's rate (see
// pair). It costs a burst of two packets every pairEvery.
const pairEvery = 16

// minPacketTime is the shortest packet-pair sample taken (a full packet
// at 12 Gbit/s): shorter gaps are acknowledgements processed in a batch,
// and a floor that short would be far below QueueFloor anyway.
const minPacketTime = 1000

// stallRTTs is how many smoothed raw RTTs without any acknowledgement make
// a silence a stall: see stalled.
const stallRTTs = 2

// Controller is one client session's congestion window, pacer and path
// chooser. It is a value meant to be embedded in the session; Init prepares
// it. It does no I/O, reads no clock and does not allocate after Init.
type Controller struct {
	// bypass is true while the session is uncongested: the window is at
	// its maximum and nothing is paced. It leads the struct so that the
	// engine's fast-path check is one load and one branch.
	bypass    bool
	slowStart bool // doubling per RTT until the first congestion signal
	rr        bool // round-robin spraying, delay-blind
	cutYet    bool // lastCut is set
	k         int  // paths

	cwnd float64 // window, packets
	fs   float64 // flow-scaling term for cwnd, in multiples of the tolerated queueing

	srtt    int64  // smoothed filtered RTT over all paths: pacing and cut period
	lastAck int64  // time of the latest acknowledgement
	rawRTT  int64  // smoothed raw (unfiltered) RTT, for stall detection
	quiet   int64  // samples before this time follow a stall: see stalled
	lastCut int64  // time of the latest cut
	cutHold int64  // the slowest voting path's smoothed RTT at that cut
	sentAt  int64  // time of the latest send while paced
	sentLen int    // and its size; the next send is due one gap later
	paced   uint32 // paced sends: every pairEvery-th is followed by a pair
	pairNow bool   // the next send is the second of a packet pair: not paced
	silent  int    // timeouts since the latest acknowledgement on any path
	rrNext  int    // round robin's next path
	nVote   int    // paths with a recent sample
	nCong   int    // of which above their target

	maxAllowed int
	cfg        Config
	fsTop      float64 // 1/sqrt(FlowScaleMax)
	fsSpan     float64 // 1/sqrt(FlowScaleMin) - 1/sqrt(FlowScaleMax)
	invPkt     float64 // 1/PacketSize
	bucket     int64   // base-RTT bucket length

	inline [inlinePaths]path
	ext    []path // the paths when there are more than inlinePaths
}

// Init prepares c for a session over paths paths (clamped to
// 1..MaxPaths), in slow start from Config.InitialWindow. It allocates only
// when paths > inlinePaths, and reuses what an earlier Init allocated.
func (c *Controller) Init(cfg Config, paths int) {
	cfg = cfg.withDefaults()
	paths = min(max(paths, 1), MaxPaths)
	ext := c.ext
	*c = Controller{cfg: cfg, k: paths, rr: cfg.RoundRobin}
	if paths > inlinePaths {
		if cap(ext) < paths {
			ext = make([]path, paths)
		}
		c.ext = ext[:paths]
		clear(c.ext)
	}
	c.maxAllowed = max(int(cfg.MaxWindow), 1)
	c.fsTop = 1 / math.Sqrt(cfg.FlowScaleMax)
	c.fsSpan = 1/math.Sqrt(cfg.FlowScaleMin) - c.fsTop
	c.invPkt = 1 / float64(cfg.PacketSize)
	c.bucket = max(int64(cfg.BaseWindow)/baseBuckets, 1)
	c.quiet = math.MinInt64
	c.slowStart = true
	c.setWindow(cfg.InitialWindow)
}

func (c *Controller) path(i int) *path {
	if c.ext != nil {
		return &c.ext[i]
	}
	return &c.inline[i]
}

// Paths is the number of paths.
func (c *Controller) Paths() int { return c.k }

// Bypass reports whether the session is uncongested: the window is at its
// maximum and nothing is paced, so Allowed is the session's credits and
// NextSend is now. The engine may then skip Allowed and NextSend (eRPC's
// Timely and wheel bypasses); it still reports every OnAck, which is how
// congestion is noticed, every OnSend and OnTimeout, and, with more than
// one path, asks PickPath.
func (c *Controller) Bypass() bool { return c.bypass }

// Window is the congestion window in packets.
func (c *Controller) Window() float64 { return c.cwnd }

// SRTT is the smoothed RTT of the filtered samples, over all paths.
func (c *Controller) SRTT() time.Duration { return time.Duration(c.srtt) }

// Allowed is how many packets the window allows in flight: the credits
// when uncongested, else the window rounded up (the pacer holds the rate
// to the fraction), and 1 below one packet (the pacer spaces them); one
// more for the second packet of a packet-pair probe (see pairEvery).
func (c *Controller) Allowed() int {
	if c.bypass {
		return c.maxAllowed
	}
	n := 1
	if c.cwnd > 1 {
		n = min(int(math.Ceil(c.cwnd)), c.maxAllowed)
	}
	if c.pairNow { // the second of a packet pair goes even over the window
		n = min(n+1, c.maxAllowed)
	}
	return n
}

// NextSend is the earliest time the next packet may leave: now when
// nothing is paced. Unless the session is uncongested, packets are spaced
// by srtt/window (half that in slow start), in proportion to their size:
// after a cut the window does not leave in a burst, and below one packet it
// is the pacer alone that holds the rate. The gap is computed from the
// window of the moment, so that a window that has just grown is not held
// to the spacing of the smaller one.
func (c *Controller) NextSend(now int64) int64 {
	if c.bypass || c.sentLen == 0 || c.pairNow {
		return now
	}
	w := c.cwnd
	if c.slowStart {
		w *= slowStartPacing
	}
	next := c.sentAt + int64(float64(c.srtt)*float64(c.sentLen)*c.invPkt/w)
	return max(next, now)
}

// OnSend records a packet of bytes leaving on path at now. The pacer keeps
// no credit for time the session did not send.
func (c *Controller) OnSend(now int64, bytes int, path int) {
	if c.k > 1 {
		p := c.path(path)
		p.unanswered++
		p.lastSend = now
	}
	if c.bypass {
		return
	}
	c.sentAt, c.sentLen = now, bytes
	c.paced++
	c.pairNow = c.paced%pairEvery == 0
}

// OnAck takes the RTT sample of one acknowledged packet sent on path, net
// of the time the server held it, and adjusts the window. bytes is the
// size of the larger packet of the exchange (the packet sent, or the reply
// that acknowledged it): what the bottleneck had to serialize. under is
// the server's share mark on the reply: this session gets less than the
// server's mean share of the request data arriving there (see the package
// doc, "The share mark").
func (c *Controller) OnAck(now int64, rtt time.Duration, bytes int, path int, under bool) {
	r := int64(rtt)
	if r < int64(c.cfg.MinRTT) {
		return // an artifact: it would poison the base RTT
	}
	p := c.path(path)
	c.silent = 0
	if c.k > 1 {
		if g := now - p.lastSample; p.sampled && g < p.srtt {
			p.gap = ewma(p.gap, g)
		}
		p.unanswered = 0
	}
	p.timeouts, p.suspectUntil = 0, 0
	p.base.add(now, r, c.bucket)
	stalled := c.stalled(now, r)
	if !stalled {
		c.pair(p, now, r, bytes)
	}
	p.link.deliver(now, bytes, c.cfg.PacketSize, stalled, r-p.base.min, c.queueing(p.base.min), c.bucket)
	p.lastSample, p.lastSent, p.lastQueued, p.sampled = now, now-r, r-p.base.min, true
	if stalled {
		return
	}
	p.filt.push(now, r)
	// The decision uses the lowest sample received since this packet left.
	// Host noise (a GC pause, a late wake-up) only adds delay, and rarely
	// to every sample of an RTT: some sample received while this packet was
	// out escaped it. A queue that lasts an RTT raises them all. A sample
	// far above the smoothed RTT must also be confirmed by the last one
	// before its window: a stall may have emptied the window of the
	// others (their samples were not kept).
	d := p.filt.minSince(now-r, r > stallRTTs*c.srtt)
	p.delay = d
	p.srtt = ewma(p.srtt, d)
	c.srtt = ewma(c.srtt, d)
	if p.tgtBase != p.base.min || p.tgtFS != c.fs || p.tgtPkt != p.link.est { // rarely: the target is cached
		p.tgt, p.tgtBase, p.tgtFS, p.tgtPkt = c.target(p), p.base.min, c.fs, p.link.est
	}
	cong := d > p.tgt
	if c.k > 1 && !c.rr {
		c.count(p, cong)
	}
	p.cong = cong
	if !c.congested(p) || c.exempt(under) {
		if !c.bypass {
			c.increase()
		}
		return
	}
	if c.mayCut(now) {
		if x, ok := c.queued(now, p); ok {
			c.cut(now, max(1-c.cfg.Beta*x, 1-c.cfg.MaxMDF))
		}
	}
}

// exempt reports whether a congested acknowledgement grows the window
// anyway: the server marked the session under its share, and the window is
// below one packet. There delay alone does not converge to fair shares (a
// session hears once per RTT/cwnd, and both the increase and the cut are
// in proportion to the window, which keeps the ratios between windows), so
// the sessions under their share grow while the others cut. Above one
// packet the delay does converge, and a session whose bottleneck is not
// at that server (its own uplink) must not ignore its queue for long: the
// exemption keeps it below two packets in flight against the delay.
func (c *Controller) exempt(under bool) bool {
	return under && c.cwnd < 1
}

// stalled reports whether a sample taken at now may be inflated by a stall
// of this host: it comes within an RTT of the end of a silence (no
// acknowledgement at all) longer than stallRTTs RTTs (raw or smoothed,
// whichever is longer), or pacing intervals below one packet. The
// acknowledgements of a session with packets in flight come every
// RTT/window; a long silence followed by a batch of them is the signature
// of a client that did not run (a GC pause, a descheduled thread), and
// every sample of the batch carries the silence. Such samples still feed
// the base RTT, but neither the filter nor any decision. A session idle
// between calls has the same silences, but nothing in flight to congest
// anything with.
func (c *Controller) stalled(now, r int64) bool {
	// The raw RTT, not the filtered one, is the longest a session with a
	// packet out can go without news; below one packet, the pacing
	// interval (RTT/cwnd). The pacer spaces packets by the smoothed RTT,
	// which only unstalled samples move: where it is the longer (the raw
	// RTT came down after a stall), the spacing it sets is no silence, or
	// no sample would ever count again and the spacing would stay
	// (TestNoStallTrap).
	gap := stallRTTs * max(c.rawRTT, c.srtt)
	if c.cwnd < 1 {
		gap = int64(float64(gap) / c.cwnd)
	}
	if c.rawRTT > 0 && now-c.lastAck > gap {
		c.quiet = now + c.srtt
	}
	c.lastAck = now
	// Every sample counts, or a real jump of the RTT, whose every silence
	// looks like a stall at first, would never be learnt.
	c.rawRTT = ewma(c.rawRTT, r)
	return now < c.quiet
}

// ewma is the smoothed value after sample v (gain 1/8, RFC 6298's).
func ewma(s, v int64) int64 {
	if s == 0 {
		return v
	}
	return s + (v-s)/8
}

// OnTimeout records that a packet sent on path was given up for lost.
// Loss alone does not cut the window: random loss would collapse it, and
// the delay already says whether there is a queue. A timeout cuts (by
// MaxMDF, at most once per RTT) when the delay agrees there is congestion,
// or when timeouts keep coming with no acknowledgement at all. Consecutive
// timeouts on one path make it suspect, for a time that doubles each time.
func (c *Controller) OnTimeout(now int64, path int) {
	p := c.path(path)
	p.timeouts++
	// The packet is no longer out on path. Its answer, if one comes, is
	// not a sample (the engine does not time a packet it retransmitted),
	// so only this keeps a path whose probe was given up from counting as
	// busy for ever (see path.queueing): on the test bed the fast path of
	// two then carried nothing for the rest of the run.
	p.unanswered = max(p.unanswered-1, 0)
	if n := int(p.timeouts) - c.cfg.SuspectAfter; n >= 0 {
		d := c.cfg.SuspectFor << min(n, 20)
		p.suspectUntil = now + int64(min(d, c.cfg.SuspectMax))
	}
	c.silent++
	if (c.congested(p) || c.silent >= silentTimeouts) && c.mayCut(now) {
		c.cut(now, 1-c.cfg.MaxMDF)
	}
}

// target is the delay the window aims at on path p: its base RTT, plus
// the tolerated queueing q, never less than LinkPackets of the path's own
// full packets at its bottleneck (the link floor), plus up to FlowScale
// times that for a small window (flow scaling).
func (c *Controller) target(p *path) int64 {
	base := p.base.min
	q := max(c.queueing(base), c.linkFloor(p))
	return base + q + int64(c.fs*float64(q))
}

// queueing is the tolerated queueing of a path of base RTT base, before
// the link floor: max(QueueFloor, QueueFrac*base).
func (c *Controller) queueing(base int64) int64 {
	return max(int64(c.cfg.QueueFloor), int64(c.cfg.QueueFrac*float64(base)))
}

// linkFloor is the queueing that LinkPackets full packets take to cross
// the path's bottleneck, from its packet-pair estimate (0 while it has
// none), capped at LinkFloorMax.
func (c *Controller) linkFloor(p *path) int64 {
	return min(int64(c.cfg.LinkPackets*float64(p.link.est)), int64(c.cfg.LinkFloorMax))
}

// pair takes a packet-pair sample of path p's bottleneck from the
// acknowledgement at now of a packet of bytes whose RTT was r: two packets
// that queued together at the bottleneck come out spaced by the second
// one's serialization there, however close together they were sent. The
// gap between two acknowledgements counts when
//   - the pair was sent at least 8 times closer together than the gap (a
//     pair spaced by its sender measures the sender, and other senders'
//     packets that came between the two inflate the gap);
//   - both packets queued, the second for q and the first for q/2: else
//     the pair need not have met in the queue, and a token-bucket shaper
//     (tc's TBF) lets packets that find tokens through at line rate;
//   - the packet is at least half a full one (a small one amplifies
//     noise), and the gap at least minPacketTime.
//
// Such a gap is at least the second packet's time at the bottleneck, and
// exactly that when nothing came between the pair. The path keeps the
// lowest, scaled to a full packet, over the base RTT's window.
func (c *Controller) pair(p *path, now, r int64, bytes int) {
	sent := now - r
	if !p.sampled || 2*bytes < c.cfg.PacketSize || sent <= p.lastSent {
		return
	}
	ackGap, sendGap := now-p.lastSample, sent-p.lastSent
	q := c.queueing(p.base.min)
	queued := r - p.base.min
	if 8*sendGap > ackGap || queued < q || 2*p.lastQueued < q {
		return
	}
	g := ackGap * int64(c.cfg.PacketSize) / int64(bytes)
	if g < minPacketTime {
		return
	}
	p.link.addPair(g)
}

// Target is the current target delay of path.
func (c *Controller) Target(path int) time.Duration {
	return time.Duration(c.target(c.path(path)))
}

// PacketTime is path's estimated time for one full packet to cross its
// bottleneck (the packet-pair estimate); 0 while there is none.
func (c *Controller) PacketTime(path int) time.Duration {
	return time.Duration(c.path(path).link.est)
}

// ObserveBase feeds path's base RTT a sample that says nothing about
// congestion by itself: the session's handshake, whose tiny packets cross
// the network before the session adds to any queue. In an incast, every
// session's first data packets meet the others' at the bottleneck; a base
// taken from them alone would count that queue as distance, the later a
// session the more, and those sessions would keep the queue standing
// (delay-based control's latecomer advantage). The sample counts for
// Config.SeedFor: a path whose full packets cross much slower than the
// handshake's (serialization on a slow link) then gets a base from data.
func (c *Controller) ObserveBase(now int64, rtt time.Duration, path int) {
	if r := int64(rtt); r >= int64(c.cfg.MinRTT) {
		c.path(path).base.seedWith(now, r, now+int64(c.cfg.SeedFor), c.bucket)
	}
}

// BaseRTT is path's base RTT: the lowest sample of the last BaseWindow.
func (c *Controller) BaseRTT(path int) time.Duration {
	return time.Duration(c.path(path).base.min)
}

// Delay is path's latest filtered delay.
func (c *Controller) Delay(path int) time.Duration {
	return time.Duration(c.path(path).delay)
}

// Suspect reports whether path is suspect at now.
func (c *Controller) Suspect(now int64, path int) bool { return c.path(path).suspect(now) }

// increase grows the window on an acknowledgement below target. Slow start
// adds a packet (doubling per RTT). After it, the increase is additive, AI
// packets per RTT: AI/cwnd per acknowledgement. Below one packet (Swift)
// it is AI per acknowledgement: such a session hears once per RTT/cwnd, so
// this is AI*cwnd per RTT, an increase in proportion to the session's rate
// that keeps the sum over many small sessions in proportion to the link;
// their fairness comes from flow scaling instead.
func (c *Controller) increase() {
	w := c.cwnd
	if c.slowStart {
		c.setWindow(w + 1)
		return
	}
	if w >= 1 {
		c.setWindow(w + c.cfg.AI/w)
	} else {
		c.setWindow(w + c.cfg.AI)
	}
}

// mayCut: at most one cut per RTT, as the effect of a cut takes an RTT to
// show in the samples; with several paths, per RTT of the slowest path
// that voted for the last cut (see queued), or the fast paths would cut
// again and again before the slow one could show the first cut's effect.
func (c *Controller) mayCut(now int64) bool {
	return !c.cutYet || now-c.lastCut >= max(c.srtt, c.cutHold)
}

func (c *Controller) cut(now int64, f float64) {
	c.lastCut, c.cutYet = now, true
	c.slowStart = false
	c.setWindow(c.cwnd * f)
}

// setWindow sets the window within its bounds, and with it the flow-scaling
// term and the bypass. Reaching the maximum ends slow start and drops any
// pacing: the session is uncongested again.
func (c *Controller) setWindow(w float64) {
	w = min(max(w, c.cfg.MinWindow), c.cfg.MaxWindow)
	c.cwnd = w
	g := (1/math.Sqrt(w) - c.fsTop) / c.fsSpan
	c.fs = c.cfg.FlowScale * min(max(g, 0), 1)
	c.bypass = w >= c.cfg.MaxWindow
	if c.bypass {
		c.sentLen = 0
		c.slowStart = false
	}
}
