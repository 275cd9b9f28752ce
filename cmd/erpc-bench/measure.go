package main

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// point is one measured configuration.
type point struct {
	size, resp  int // request and response bytes
	conc        int // calls in flight
	sessions    int
	loss        float64
	warmup, dur time.Duration
}

// Phases of a meter: calls completing in phaseMeasure are counted.
const (
	phaseWarm int32 = iota
	phaseMeasure
	phaseStop
)

// meter times one point: the driver moves it from warm-up to measuring to
// stop, and the system's goroutines record each completed call in a
// recorder of their own (no sharing on the hot path).
type meter struct {
	phase atomic.Int32

	mu     sync.Mutex
	recs   []*recorder
	t0, t1 time.Time
	m0, m1 uint64 // client Mallocs at t0 and t1
	extra  map[string]any
}

// setExtra attaches a system-specific figure to the point's result (an
// extra JSON field).
func (m *meter) setExtra(k string, v any) {
	m.mu.Lock()
	if m.extra == nil {
		m.extra = map[string]any{}
	}
	m.extra[k] = v
	m.mu.Unlock()
}

// recorder is one goroutine's share of a point's results.
type recorder struct {
	h    hist
	ops  int64
	errs int64
	bad  error // first error seen, for the report
}

func (m *meter) recorder() *recorder {
	r := &recorder{}
	m.mu.Lock()
	m.recs = append(m.recs, r)
	m.mu.Unlock()
	return r
}

func (m *meter) stopped() bool { return m.phase.Load() == phaseStop }

// done records a call that started at t0 and ended now with err.
func (r *recorder) done(m *meter, t0 time.Time, err error) {
	if m.phase.Load() != phaseMeasure {
		return
	}
	if err != nil {
		r.errs++
		if r.bad == nil {
			r.bad = err
		}
		return
	}
	r.h.record(time.Since(t0))
	r.ops++
}

// client is one system's client side, connected to its server.
type client interface {
	// run makes calls as p says until m stops, then waits for the calls in
	// flight and returns. It returns an error only if it could not run.
	run(p point, m *meter) error
	close()
}

// result is one measured point of one system.
type result struct {
	p        point
	system   string
	tr       string
	ops      int64
	errs     int64
	secs     float64
	h        hist
	allocs   float64
	extra    map[string]any
	err      error // the point could not be measured
	firstErr error // the first failed call, if any
	inlight  int   // calls actually in flight, when a system caps it
}

// measure runs one point on c: warm-up, measured window, stop.
func measure(c client, p point) result {
	m := &meter{}
	runErr := make(chan error, 1)
	go func() { runErr <- c.run(p, m) }()
	var err error
	wait := func(d time.Duration) bool {
		select {
		case err = <-runErr:
			return false
		case <-time.After(d):
			return true
		}
	}
	var ms runtime.MemStats
	res := result{p: p}
	if wait(p.warmup) {
		runtime.ReadMemStats(&ms)
		m.m0, m.t0 = ms.Mallocs, time.Now()
		m.phase.Store(phaseMeasure)
		if wait(p.dur) {
			m.phase.Store(phaseStop)
			m.t1 = time.Now()
			runtime.ReadMemStats(&ms)
			m.m1 = ms.Mallocs
			select {
			case err = <-runErr:
			case <-time.After(15 * time.Second):
				err = fmt.Errorf("calls still in flight 15 s after the end of the point")
			}
		}
	}
	m.phase.Store(phaseStop)
	if err != nil {
		res.err = err
		return res
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.recs {
		res.h.merge(&r.h)
		res.ops += r.ops
		res.errs += r.errs
		if res.firstErr == nil {
			res.firstErr = r.bad
		}
	}
	res.extra = m.extra
	res.secs = m.t1.Sub(m.t0).Seconds()
	res.allocs = -1
	if res.ops > 0 {
		res.allocs = float64(m.m1-m.m0) / float64(res.ops)
	}
	return res
}

// absorb adds a later round of the same point and system (see
// measureRounds): calls, errors, time and latencies add up; allocations
// per call are weighted by calls; the first error stays; a round that
// could not run makes the point fail. Extra figures that count events
// (roundCounts) add up; others keep the latest round's value.
func (r *result) absorb(o result) {
	if r.err != nil {
		return
	}
	if o.err != nil {
		r.err = o.err
		return
	}
	if r.allocs >= 0 && o.allocs >= 0 && r.ops+o.ops > 0 {
		r.allocs = (r.allocs*float64(r.ops) + o.allocs*float64(o.ops)) / float64(r.ops+o.ops)
	} else if o.allocs >= 0 {
		r.allocs = o.allocs
	}
	r.ops += o.ops
	r.errs += o.errs
	r.secs += o.secs
	r.h.merge(&o.h)
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
	r.inlight = max(r.inlight, o.inlight)
	for key, v := range o.extra {
		if r.extra == nil {
			r.extra = map[string]any{}
		}
		if roundCounts[key] {
			v = addCounts(r.extra[key], v)
		}
		r.extra[key] = v
	}
}

// roundCounts are the extra figures that count events over a point, which
// absorb adds up over its rounds.
var roundCounts = map[string]bool{"retransmits": true, "nacks": true, "lost_datagrams": true}

// addCounts adds two counts of the same integer type; anything else
// yields b.
func addCounts(a, b any) any {
	switch bv := b.(type) {
	case int:
		if av, ok := a.(int); ok {
			return av + bv
		}
	case int64:
		if av, ok := a.(int64); ok {
			return av + bv
		}
	case uint64:
		if av, ok := a.(uint64); ok {
			return av + bv
		}
	}
	return b
}

// payload is a request of n bytes, not all zero.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

// errShortResponse is a call answered with a response of the wrong size.
var errShortResponse = errors.New("response of the wrong size")
