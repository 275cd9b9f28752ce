package main

import (
	"errors"
	"testing"
	"time"
)

// A point measured in rounds reports what one long round would: the
// rounds' calls, time and latencies together.
func TestAbsorbMergesRounds(t *testing.T) {
	round := func(ops int64, lat time.Duration, allocs float64, retx uint64) result {
		r := result{ops: ops, errs: 1, secs: 0.5, allocs: allocs,
			extra: map[string]any{"retransmits": retx, "datagram_bytes": 1472}}
		for range ops {
			r.h.record(lat)
		}
		return r
	}
	r := round(100, 10*time.Microsecond, 0, 2)
	r.absorb(round(300, 20*time.Microsecond, 2, 3))
	if r.ops != 400 || r.errs != 2 || r.secs != 1 {
		t.Fatalf("ops %d errs %d secs %v, want 400, 2, 1", r.ops, r.errs, r.secs)
	}
	if r.allocs != 1.5 {
		t.Errorf("allocs per call %v, want 1.5 (weighted by calls)", r.allocs)
	}
	if r.h.n != 400 || r.h.quantile(0.5) < 15e3 {
		t.Errorf("merged histogram: %d samples, p50 %v ns; want 400 samples and the larger round's p50", r.h.n, r.h.quantile(0.5))
	}
	if got := r.extra["retransmits"]; got != uint64(5) {
		t.Errorf("retransmits %v, want 5 (summed)", got)
	}
	if got := r.extra["datagram_bytes"]; got != 1472 {
		t.Errorf("datagram_bytes %v, want 1472 (not a count)", got)
	}
	bad := errors.New("server died")
	r.absorb(result{err: bad})
	if !errors.Is(r.err, bad) {
		t.Errorf("a round that could not run: err %v, want %v", r.err, bad)
	}
}
