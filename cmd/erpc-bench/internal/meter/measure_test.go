package meter

import (
	"errors"
	"testing"
	"time"
)

// A point measured in rounds reports what one long round would: the
// rounds' calls, time and latencies together.
func TestAbsorbMergesRounds(t *testing.T) {
	round := func(ops int64, lat time.Duration, allocs float64, retx uint64) Result {
		r := Result{Ops: ops, Errs: 1, Secs: 0.5, Allocs: allocs,
			Extra: map[string]any{"retransmits": retx, "datagram_bytes": 1472}}
		for range ops {
			r.H.Record(lat)
		}
		return r
	}
	r := round(100, 10*time.Microsecond, 0, 2)
	r.Absorb(round(300, 20*time.Microsecond, 2, 3))
	if r.Ops != 400 || r.Errs != 2 || r.Secs != 1 {
		t.Fatalf("ops %d errs %d secs %v, want 400, 2, 1", r.Ops, r.Errs, r.Secs)
	}
	if r.Allocs != 1.5 {
		t.Errorf("allocs per call %v, want 1.5 (weighted by calls)", r.Allocs)
	}
	if r.H.N != 400 || r.H.Quantile(0.5) < 15e3 {
		t.Errorf("merged histogram: %d samples, p50 %v ns; want 400 samples and the larger round's p50", r.H.N, r.H.Quantile(0.5))
	}
	if got := r.Extra["retransmits"]; got != uint64(5) {
		t.Errorf("retransmits %v, want 5 (summed)", got)
	}
	if got := r.Extra["datagram_bytes"]; got != 1472 {
		t.Errorf("datagram_bytes %v, want 1472 (not a count)", got)
	}
	bad := errors.New("server died")
	r.Absorb(Result{Err: bad})
	if !errors.Is(r.Err, bad) {
		t.Errorf("a round that could not run: err %v, want %v", r.Err, bad)
	}
}
