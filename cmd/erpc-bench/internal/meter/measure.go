package meter

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Point is one measured configuration.
type Point struct {
	Size, Resp  int // request and response bytes
	Conc        int // calls in flight
	Sessions    int
	Loss        float64
	Warmup, Dur time.Duration
}

// Phases of a meter: calls completing in phaseMeasure are counted.
const (
	phaseWarm int32 = iota
	PhaseMeasure
	PhaseStop
)

// Meter times one point: the driver moves it from warm-up to measuring to
// stop, and the system's goroutines record each completed call in a
// recorder of their own (no sharing on the hot path).
type Meter struct {
	Phase atomic.Int32

	mu     sync.Mutex
	recs   []*Recorder
	t0, t1 time.Time
	m0, m1 uint64 // client Mallocs at t0 and t1
	extra  map[string]any
}

// SetExtra attaches a system-specific figure to the point's result (an
// extra JSON field).
func (m *Meter) SetExtra(k string, v any) {
	m.mu.Lock()
	if m.extra == nil {
		m.extra = map[string]any{}
	}
	m.extra[k] = v
	m.mu.Unlock()
}

// Recorder is one goroutine's share of a point's results.
type Recorder struct {
	h    Hist
	ops  int64
	errs int64
	bad  error // first error seen, for the report
}

// Recorder gives a goroutine a recorder of its own.
func (m *Meter) Recorder() *Recorder {
	r := &Recorder{}
	m.mu.Lock()
	m.recs = append(m.recs, r)
	m.mu.Unlock()
	return r
}

// Stopped reports whether the point is over.
func (m *Meter) Stopped() bool { return m.Phase.Load() == PhaseStop }

// Done records a call that started at t0 and ended now with err.
func (r *Recorder) Done(m *Meter, t0 time.Time, err error) {
	if m.Phase.Load() != PhaseMeasure {
		return
	}
	if err != nil {
		r.errs++
		if r.bad == nil {
			r.bad = err
		}
		return
	}
	r.h.Record(time.Since(t0))
	r.ops++
}

// Client is one system's client side, connected to its server.
type Client interface {
	// run makes calls as p says until m stops, then waits for the calls in
	// flight and returns. It returns an error only if it could not run.
	Run(p Point, m *Meter) error
	Close()
}

// Result is one measured point of one system.
type Result struct {
	P        Point
	System   string
	Tr       string
	Ops      int64
	Errs     int64
	Secs     float64
	H        Hist
	Allocs   float64
	Extra    map[string]any
	Err      error // the point could not be measured
	FirstErr error // the first failed call, if any
	Inlight  int   // calls actually in flight, when a system caps it
}

// Measure runs one point on c: warm-up, measured window, stop.
func Measure(c Client, p Point) Result {
	m := &Meter{}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(p, m) }()
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
	res := Result{P: p}
	if wait(p.Warmup) {
		runtime.ReadMemStats(&ms)
		m.m0, m.t0 = ms.Mallocs, time.Now()
		m.Phase.Store(PhaseMeasure)
		if wait(p.Dur) {
			m.Phase.Store(PhaseStop)
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
	m.Phase.Store(PhaseStop)
	if err != nil {
		res.Err = err
		return res
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.recs {
		res.H.Merge(&r.h)
		res.Ops += r.ops
		res.Errs += r.errs
		if res.FirstErr == nil {
			res.FirstErr = r.bad
		}
	}
	res.Extra = m.extra
	res.Secs = m.t1.Sub(m.t0).Seconds()
	res.Allocs = -1
	if res.Ops > 0 {
		res.Allocs = float64(m.m1-m.m0) / float64(res.Ops)
	}
	return res
}

// Absorb adds a later round of the same point and system (see
// measureRounds): calls, errors, time and latencies add up; allocations
// per call are weighted by calls; the first error stays; a round that
// could not run makes the point fail. Extra figures that count events
// (roundCounts) add up; others keep the latest round's value.
func (r *Result) Absorb(o Result) {
	if r.Err != nil {
		return
	}
	if o.Err != nil {
		r.Err = o.Err
		return
	}
	if r.Allocs >= 0 && o.Allocs >= 0 && r.Ops+o.Ops > 0 {
		r.Allocs = (r.Allocs*float64(r.Ops) + o.Allocs*float64(o.Ops)) / float64(r.Ops+o.Ops)
	} else if o.Allocs >= 0 {
		r.Allocs = o.Allocs
	}
	r.Ops += o.Ops
	r.Errs += o.Errs
	r.Secs += o.Secs
	r.H.Merge(&o.H)
	if r.FirstErr == nil {
		r.FirstErr = o.FirstErr
	}
	r.Inlight = max(r.Inlight, o.Inlight)
	for key, v := range o.Extra {
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		if roundCounts[key] {
			v = addCounts(r.Extra[key], v)
		}
		r.Extra[key] = v
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

// Payload is a request of n bytes, not all zero.
func Payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

// ErrShortResponse is a call answered with a response of the wrong size.
var ErrShortResponse = errors.New("response of the wrong size")
