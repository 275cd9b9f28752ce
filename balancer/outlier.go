package balancer

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// OutlierStatus is a replica's standing with the outlier detector.
type OutlierStatus int32

const (
	Serving OutlierStatus = iota // takes calls
	Ejected                      // out for a backoff
	Probing                      // back for one probe call
)

// OutlierConfig tunes an Outlier; zero fields take the defaults.
type OutlierConfig struct {
	// ConsecutiveFailures ejects a replica after this many failed calls
	// in a row (default 5).
	ConsecutiveFailures int
	// LatencyFactor ejects a replica whose latency average exceeds this
	// many times the median of the other replicas' (default 3), checked by
	// Sweep on replicas with at least MinSamples samples (default 20),
	// when at least two others have as many.
	LatencyFactor float64
	MinSamples    uint64
	// An ejection lasts BaseEjection (default 1 s) doubled per
	// consecutive ejection, capped at MaxEjection (default 30 s), less a
	// random part of up to Jitter (default 0.2) of it, so replicas
	// ejected together do not return together. The count restarts once
	// a replica has served MaxEjection without being ejected.
	BaseEjection time.Duration
	MaxEjection  time.Duration
	Jitter       float64
	// MaxEjectedFraction bounds the replicas out at once (ejected or
	// probing) to this fraction of all, rounded down (default 0.5): a
	// fleet-wide fault must not eject the fleet. A lone replica is never
	// ejected.
	MaxEjectedFraction float64
	// Rand is the jitter's source (nil: math/rand/v2's).
	Rand *rand.Rand
}

func (c *OutlierConfig) setDefaults() {
	if c.ConsecutiveFailures <= 0 {
		c.ConsecutiveFailures = 5
	}
	if c.LatencyFactor <= 0 {
		c.LatencyFactor = 3
	}
	if c.MinSamples == 0 {
		c.MinSamples = 20
	}
	if c.BaseEjection <= 0 {
		c.BaseEjection = time.Second
	}
	if c.MaxEjection <= 0 {
		c.MaxEjection = 30 * time.Second
	}
	if c.Jitter <= 0 || c.Jitter > 1 {
		c.Jitter = 0.2
	}
	if c.MaxEjectedFraction <= 0 || c.MaxEjectedFraction > 1 {
		c.MaxEjectedFraction = 0.5
	}
}

// Outlier is the fleet client's outlier detector. It takes no clock: each
// method is told the time. Observe is on every call's path and takes no
// lock unless the call ejects its replica; Status and Probe (when no probe
// is due) are lock-free too. Whenever a method reports a change, the
// client passes the replicas whose Status is Serving to its balancer.
//
// A failure is a call that ended with an error that blames the replica
// (the client decides which errors do; an application's own answer
// should not) and that ran: never-ran calls count neither way.
type Outlier struct {
	cfg OutlierConfig

	mu       sync.Mutex
	replicas []*Replica
	state    map[*Replica]*ejection
	// nextProbe is when (unix ns) the first ejected replica may be probed,
	// math.MaxInt64 when none is ejected: Probe's lock-free test.
	nextProbe atomic.Int64
}

// ejection is what the detector remembers of a replica once ejected.
type ejection struct {
	count      int       // consecutive ejections
	until      time.Time // ejected until
	probeSince time.Time // when its probe call went out
	returnedAt time.Time // when it last came back
}

// NewOutlier returns a detector with cfg's settings.
func NewOutlier(cfg OutlierConfig) *Outlier {
	cfg.setDefaults()
	o := &Outlier{cfg: cfg, state: map[*Replica]*ejection{}}
	o.nextProbe.Store(math.MaxInt64)
	return o
}

// SetReplicas gives the detector the client's current replicas (all of
// them, ejected or not); it forgets the others (which serve again should
// the client reuse them).
func (o *Outlier) SetReplicas(all []*Replica) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.replicas = slices.Clone(all)
	for r := range o.state {
		if !slices.Contains(all, r) {
			delete(o.state, r)
			r.State.status.Store(int32(Serving))
			r.State.failures.Store(0)
		}
	}
	o.updateNextProbe()
}

// Status is r's standing; lock-free.
func (o *Outlier) Status(r *Replica) OutlierStatus {
	return OutlierStatus(r.State.status.Load())
}

// Observe records the end of a call the balancer placed on r and reports
// whether it ejected r. Calls ending on a replica already out (they
// started before it was ejected) are ignored.
func (o *Outlier) Observe(r *Replica, d DoneInfo, now time.Time) (changed bool) {
	if d.NeverRan || OutlierStatus(r.State.status.Load()) != Serving {
		return false
	}
	if d.Err == nil {
		if r.State.failures.Load() != 0 {
			r.State.failures.Store(0)
		}
		return false
	}
	if r.State.failures.Add(1) < int64(o.cfg.ConsecutiveFailures) {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.eject(r, now)
}

// Probe returns an ejected replica whose backoff has passed, marking it
// Probing: the caller sends this one call to it and reports the call's
// end with ObserveProbe. Nil (without a lock) when none is due.
func (o *Outlier) Probe(now time.Time) *Replica {
	if now.UnixNano() < o.nextProbe.Load() {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var due *Replica
	for r, e := range o.state {
		if o.Status(r) == Ejected && !e.until.After(now) && (due == nil || e.until.Before(o.state[due].until)) {
			due = r
		}
	}
	if due != nil {
		due.State.status.Store(int32(Probing))
		o.state[due].probeSince = now
	}
	o.updateNextProbe()
	return due
}

// ObserveProbe records the end of the probe call Probe handed out: on
// success r serves again (changed), judged afresh (its latency average and
// failure count are reset); on failure it is ejected again, for longer; a
// never-ran probe leaves it due for another probe.
func (o *Outlier) ObserveProbe(r *Replica, d DoneInfo, now time.Time) (changed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.state[r]
	if e == nil || o.Status(r) != Probing {
		return false
	}
	switch {
	case d.NeverRan:
		r.State.status.Store(int32(Ejected))
		o.updateNextProbe()
		return false
	case d.Err != nil:
		o.ejectFor(r, e, now)
		return false
	}
	r.State.failures.Store(0)
	r.State.resetLatency()
	r.State.status.Store(int32(Serving))
	e.returnedAt = now
	return true
}

// Sweep runs the latency check and gives up on probes outstanding longer
// than MaxEjection (ejecting their replicas again); the client calls it
// about once a second. It reports whether it ejected a replica.
func (o *Outlier) Sweep(now time.Time) (changed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for r, e := range o.state {
		if o.Status(r) == Probing && now.Sub(e.probeSince) >= o.cfg.MaxEjection {
			o.ejectFor(r, e, now)
		}
	}
	for _, r := range o.slowReplicas() {
		changed = o.eject(r, now) || changed
	}
	return changed
}

// slowReplicas are the serving replicas, slowest first, whose average
// exceeds LatencyFactor × the median of the others'.
func (o *Outlier) slowReplicas() []*Replica {
	var judged []*Replica
	for _, r := range o.replicas {
		if o.Status(r) == Serving && r.State.Samples() >= o.cfg.MinSamples {
			judged = append(judged, r)
		}
	}
	if len(judged) < 3 {
		return nil
	}
	slices.SortFunc(judged, func(a, b *Replica) int { return cmp.Compare(b.State.Latency(), a.State.Latency()) })
	var slow []*Replica
	others := make([]time.Duration, 0, len(judged)-1)
	for _, r := range judged {
		others = others[:0]
		for _, x := range judged {
			if x != r {
				others = append(others, x.State.Latency())
			}
		}
		slices.Sort(others)
		median := float64(others[(len(others)-1)/2]+others[len(others)/2]) / 2
		if float64(r.State.Latency()) > o.cfg.LatencyFactor*median {
			slow = append(slow, r)
		}
	}
	return slow
}

// eject takes r out if the ejection cap allows (o.mu held).
func (o *Outlier) eject(r *Replica, now time.Time) bool {
	if o.Status(r) != Serving || !slices.Contains(o.replicas, r) {
		return false
	}
	out := 0
	for _, x := range o.replicas {
		if o.Status(x) != Serving {
			out++
		}
	}
	if out+1 > int(o.cfg.MaxEjectedFraction*float64(len(o.replicas))) {
		return false // r stays; its next failure tries again
	}
	e := o.state[r]
	if e == nil {
		e = &ejection{}
		o.state[r] = e
	}
	if !e.returnedAt.IsZero() && now.Sub(e.returnedAt) >= o.cfg.MaxEjection {
		e.count = 0
	}
	o.ejectFor(r, e, now)
	return true
}

// ejectFor starts r's next, longer ejection (o.mu held).
func (o *Outlier) ejectFor(r *Replica, e *ejection, now time.Time) {
	e.count++
	e.until = now.Add(o.ejectionTime(e.count))
	r.State.status.Store(int32(Ejected))
	o.updateNextProbe()
}

// ejectionTime is the n-th consecutive ejection's length.
func (o *Outlier) ejectionTime(n int) time.Duration {
	d := o.cfg.MaxEjection
	if n <= 30 {
		d = min(d, o.cfg.BaseEjection<<(n-1))
	}
	return d - time.Duration(o.cfg.Jitter*randFloat(o.cfg.Rand)*float64(d))
}

func (o *Outlier) updateNextProbe() {
	next := int64(math.MaxInt64)
	for r, e := range o.state {
		if o.Status(r) == Ejected {
			next = min(next, e.until.UnixNano())
		}
	}
	o.nextProbe.Store(next)
}

// randFloat is a float in [0, 1) from rnd, or math/rand/v2's when nil.
func randFloat(rnd *rand.Rand) float64 {
	if rnd == nil {
		return rand.Float64()
	}
	return rnd.Float64()
}
