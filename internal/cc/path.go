package cc

import "math"

// filterCap is the capacity of a path's delay filter. The filter keeps
// only the samples that can still be a minimum (an increasing run), which
// noise keeps short; when a rising queue fills it, the oldest (lowest)
// entry goes, which only makes the filter quicker to see the queue.
const filterCap = 8

// baseBuckets is the number of buckets of the base-RTT window: a sample
// stays the base for between 3/4 and all of BaseWindow.
const baseBuckets = 4

// staleRTTs is how many of a path's smoothed RTTs pass without news from it
// before its delay is forgotten: the path chooser then tries it again, and
// it stops voting on the session's congestion.
const staleRTTs = 8

// probeWait is the least time a path that went quiet counts as busy
// while the one packet that probes it is out: twice the engine's least
// retransmission timeout (1 ms).
const probeWait = 2e6

// minFilter answers "the lowest RTT sample received since time t" for any
// recent t (see minSince for the exact question). It holds a monotone
// queue: sample times increase from the oldest entry to the newest, and
// values do not decrease, because a new sample removes every entry higher
// than itself (no window that contains the removed entry misses the newer,
// lower one), and an equal one of the same time. The answer for t is the
// oldest entry received at or after t.
type minFilter struct {
	t    [filterCap]int64
	v    [filterCap]int64
	head uint8
	n    uint8
}

func (f *minFilter) push(now, v int64) {
	for f.n > 0 {
		i := (f.head + f.n - 1) % filterCap
		if f.v[i] < v || f.v[i] == v && f.t[i] < now {
			break
		}
		f.n--
	}
	if f.n == filterCap {
		f.head = (f.head + 1) % filterCap
		f.n--
	}
	i := (f.head + f.n) % filterCap
	f.t[i], f.v[i] = now, v
	f.n++
}

// minSince returns the lowest sample received at or after start, and
// with before also the one received last before start; 0 if there is
// none. (The last sample before start may have been displaced by a lower
// one, which is then in the window or is itself the last before start:
// either way the answer is not higher than the exact one.)
func (f *minFilter) minSince(start int64, before bool) int64 {
	if f.n == 0 {
		return 0
	}
	for k := uint8(0); k < f.n; k++ {
		if i := (f.head + k) % filterCap; f.t[i] >= start {
			if before && k > 0 {
				i = (i + filterCap - 1) % filterCap
			}
			return f.v[i]
		}
	}
	return f.v[(f.head+f.n-1)%filterCap]
}

// winMin is the minimum of the samples of the last window, kept as the
// minima of baseBuckets consecutive buckets: the oldest bucket is dropped
// as time moves on, so a base RTT that no longer holds (a route change)
// expires, while a lower sample replaces it at once.
//
// A seed (the handshake's RTT) takes part until its own end, however the
// buckets go.
type winMin struct {
	b       [baseBuckets]int64 // minimum of each bucket; 0 when empty
	cur     uint8              // the bucket now filling
	begun   bool
	end     int64 // when the current bucket closes
	min     int64 // minimum over the buckets and the seed; 0 when empty
	seed    int64 // 0: none
	seedEnd int64
}

// seedWith makes v part of the minimum until until.
func (w *winMin) seedWith(now, v, until, bucket int64) {
	w.seed, w.seedEnd = v, until
	if !w.begun {
		w.rotate(now, bucket)
	}
	if w.min == 0 || v < w.min {
		w.min = v
	}
}

func (w *winMin) add(now, v, bucket int64) {
	if now >= w.end || !w.begun || (w.seed != 0 && now >= w.seedEnd) {
		w.rotate(now, bucket)
	}
	if b := &w.b[w.cur]; *b == 0 || v < *b {
		*b = v
	}
	if w.min == 0 || v < w.min {
		w.min = v
	}
}

// rotate closes the buckets that have ended by now and recomputes the
// minimum over those left.
func (w *winMin) rotate(now, bucket int64) {
	if w.seed != 0 && now >= w.seedEnd {
		w.seed = 0
	}
	if !w.begun || (now-w.end)/bucket+1 >= baseBuckets {
		*w = winMin{begun: true, end: now + bucket, seed: w.seed, seedEnd: w.seedEnd, min: w.seed}
		return
	}
	for now >= w.end {
		w.cur = (w.cur + 1) % baseBuckets
		w.b[w.cur] = 0
		w.end += bucket
	}
	w.min = w.seed
	for _, b := range w.b {
		if b != 0 && (w.min == 0 || b < w.min) {
			w.min = b
		}
	}
}

// path is what the controller knows of one path.
type path struct {
	filt minFilter
	base winMin
	link linkRate // estimate of a full packet's time at the bottleneck

	srtt  int64 // smoothed filtered RTT
	gap   int64 // smoothed interval between acknowledgements in a busy period
	delay int64 // latest filtered RTT
	tgt   int64 // target delay at the latest sample
	// The target is recomputed only when what it depends on changed.
	tgtBase int64
	tgtFS   float64
	tgtPkt  int64

	lastSample   int64 // latest acknowledgement on this path
	lastSent     int64 // when its packet left (less the server's hold)
	lastQueued   int64 // and how long it queued (its RTT above the base)
	suspectUntil int64 // not chosen before this while another path is usable
	timeouts     int32 // consecutive timeouts, reset by an acknowledgement
	unanswered   int32 // packets sent since the latest acknowledgement
	lastSend     int64 // latest packet sent on this path (with several paths)

	sampled bool // has had a sample
	cong    bool // latest filtered delay above target
	vote    bool // counted in the session's vote (recent sample)
}

// staleAfter is how long the path's delay stays news.
func (p *path) staleAfter() int64 { return staleRTTs * p.srtt }

// queueing is the path's estimated queueing delay for the path chooser:
// the latest filtered delay above the base, plus the packets sent on it
// since its latest acknowledgement at the path's own pace (its smoothed
// interval between acknowledgements): the delay a path reports is an RTT
// old, and without this the chooser would pour every packet of that RTT
// into a path that looked idle. A path never measured, or not heard of for
// a while, is worth a try (0), one packet at a time: while that packet is
// out the path counts as busy, so that the chooser does not pour a window
// into a path it knows nothing about (or that has gone dark). A probe
// unanswered for probeWait (or 8 of the path's RTTs, if longer) is
// presumed lost and the path tried again: its answer may never be a
// sample (the engine drops the record of a packet whose data another
// copy delivered, and does not time a retransmitted one), and a path
// counted busy for ever is never chosen again.
func (p *path) queueing(now int64) int64 {
	if !p.sampled || p.srtt == 0 || now-p.lastSample > p.staleAfter() {
		if p.unanswered > 0 && now-p.lastSend < max(p.staleAfter(), probeWait) {
			return math.MaxInt64
		}
		return 0
	}
	return max(p.delay-p.base.min+int64(p.unanswered)*p.gap-(now-p.lastSample), 0)
}

func (p *path) suspect(now int64) bool { return p.suspectUntil > now }
