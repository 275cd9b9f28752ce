//go:build linux

package fleet

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

const (
	// slowFactor is the slow replica's service time over the others'.
	slowFactor = 10
	// addShareWindow is how long after the new replica became resolvable
	// its share is measured.
	addShareWindow = 2 * time.Second
	// detectTime is the failure-detection time kill's p99_after waits:
	// erpc's default failure timeout (WithFailureTimeout).
	detectTime = 2 * time.Second
	// kill's and restart-storm's target: p99 back within this of before.
	recoveryLimit = 1.2
)

// rowOf fills res from the calls: the measured span (from the end of the
// warm-up to the end) and the part's own fields.
func (r *fleetRun) rowOf(res *meter.Result, ev events, calls []call, logs []callLog) {
	span := window(calls, ev.measured, ev.end)
	all := summarize(span)
	for _, l := range all.lats {
		res.H.Record(l)
	}
	res.Ops, res.Errs, res.Secs = int64(len(all.lats)), int64(all.failed), ev.end.Sub(ev.measured).Seconds()
	n := r.fc.servers
	if r.part == "add" {
		n++
	}
	x := map[string]any{
		"calls": all.calls, "failed": all.failed, "per_server": shares(span, n),
		"rate": r.fc.rate, "service_us": us(float64(r.fc.service)), "clients": r.clients,
		"balancer": map[string]string{"erpc": "p2c", "erpc-rr": "round_robin", "grpc": "round_robin"}[r.system],
	}
	if r.system != "grpc" {
		x["cc"] = r.fc.cc
		if r.f.DNS != nil {
			x["dns_period_ms"] = ms(r.fc.dnsPeriod)
		}
	}
	if r.f.DNS != nil {
		x["target"] = "dns:/// (dnsmasq on the testbed)"
	} else {
		x["target"] = "static:/// (dnsmasq not installed)"
	}
	errs, counters, lag := map[string]int64{}, map[string]int64{}, 0.0
	for _, l := range logs {
		for k, v := range l.Errors {
			errs[k] += v
		}
		for k, v := range l.Counters {
			counters[k] += v
		}
		lag = max(lag, l.LagP99us)
	}
	x["gen_lag_p99_us"] = lag
	for k, v := range counters {
		x[k] = v
	}
	if fa, ok := counters["failed_attempts"]; ok {
		// Attempts that failed and were tried again (never ran) and
		// then succeeded: the user saw no failure for them.
		x["retried"] = max(fa-int64(all.failed), 0)
	}
	if len(errs) > 0 {
		keys := slices.Sorted(maps.Keys(errs))
		res.FirstErr = fmt.Errorf("%d× %s", errs[keys[0]], keys[0])
	}
	before := summarize(window(calls, ev.measured, ev.change))
	after := window(calls, ev.change, ev.end)
	x["p99_before_us"] = us(before.quantile(0.99))
	switch r.part {
	case "kill":
		x["replica0_share_after"] = shares(after, n)[0]
		late := summarize(window(calls, ev.change.Add(detectTime), ev.end))
		x["p99_after_us"] = us(late.quantile(0.99))
		x["failed_after_detect"] = late.failed
		x["detect_ms"] = ms(detectTime)
		x["recovery_ms"] = recoveryMS(calls, ev.change, ev.end, before)
	case "drain":
		x["replica0_share_after"] = shares(after, n)[0]
		x["p99_after_us"] = us(summarize(after).quantile(0.99))
		if last := lastServed(calls, 0); last.After(ev.change) {
			x["drained_last_call_ms"] = ms(last.Sub(ev.change))
		} else {
			x["drained_last_call_ms"] = 0.0
		}
	case "add":
		w := window(calls, ev.resolvable, ev.resolvable.Add(addShareWindow))
		x["new_share_2s"] = shares(w, n)[n-1]
		x["resolvable_ms"] = ms(ev.resolvable.Sub(ev.change))
		if t, ok := firstServed(calls, n-1, ev.resolvable); ok {
			x["first_call_ms"] = ms(t.Sub(ev.resolvable))
		} else {
			x["first_call_ms"] = -1.0
		}
	case "slow":
		s := summarize(after)
		x["p99_healthy_us"] = x["p99_before_us"]
		x["p99_slow_us"] = us(s.quantile(0.99))
		if h := before.quantile(0.99); h > 0 {
			x["p99_rel_healthy"] = report.Round3(s.quantile(0.99) / h)
		}
		x["slow_share"] = shares(after, n)[0]
	case "restart-storm":
		r.stormFields(x, ev, calls, before)
	}
	res.Extra = x
}

// recoveryMS is how long after t0 the p99 came back within recoveryLimit
// of before's (-1: not in the run).
func recoveryMS(calls []call, t0, end time.Time, before summary) float64 {
	d := recovery(calls, t0, end, recoveryLimit*before.quantile(0.99))
	if d < 0 {
		return -1
	}
	return ms(d)
}

// stormFields: the connects the replicas saw per second (the highest over
// a sliding second), the bound (WithConnectRate × clients), the sessions,
// and whether every client had a call answered in the last second.
func (r *fleetRun) stormFields(x map[string]any, ev events, calls []call, before summary) {
	x["max_connects_per_s"] = maxPerSecond(ev.connects)
	x["connect_bound_per_s"] = r.fc.connectRate * float64(r.clients)
	x["sessions"] = r.clients * r.fc.servers
	ok := map[int]bool{}
	for _, c := range window(calls, ev.end.Add(-time.Second), ev.end) {
		if !c.failed() {
			ok[c.client] = true
		}
	}
	x["recovered"] = len(ok)
	x["recovered_all"] = len(ok) == r.clients
	// All recovered: every client's first answered call after the restart.
	var last time.Time
	for cl := range r.clients {
		var first time.Time
		for _, c := range calls {
			if c.client == cl && !c.failed() && c.at.After(ev.change) && (first.IsZero() || c.at.Before(first)) {
				first = c.at
			}
		}
		if first.IsZero() {
			last = time.Time{}
			break
		}
		if first.After(last) {
			last = first
		}
	}
	if last.IsZero() {
		x["recovery_ms"] = -1.0
	} else {
		x["recovery_ms"] = ms(last.Sub(ev.change))
	}
	x["p99_recovery_ms"] = recoveryMS(calls, ev.change, ev.end, before)
}

// maxPerSecond is the most connects the replicas saw, together, in any
// second (a sliding window of FleetBinWidth steps).
func maxPerSecond(bins []testbed.ConnectBins) int64 {
	sum := map[int64]int64{} // bin start, Unix ns
	w := int64(testbed.FleetBinWidth)
	for _, b := range bins {
		for i, n := range b.N {
			sum[(b.EpochNS+int64(i)*w)/w*w] += n
		}
	}
	var best int64
	for t := range sum {
		var s int64
		for u := t; u < t+int64(time.Second); u += w {
			s += sum[u]
		}
		best = max(best, s)
	}
	return best
}
