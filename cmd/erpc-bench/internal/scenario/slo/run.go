package slo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/erpc-go/erpc/examples/kv"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/openloop"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// The slo scenario: throughput under a tail-latency SLO (issue 17). An
// open-loop Poisson generator (package openloop) offers a sweep of loads to a
// server with a fixed number of workers; each point reports p50/p99/p99.9
// measured from the planned send times, with NACKs and failures counted
// as infinite latency, the throughput achieved, the NACK fraction and the
// generator's lag; the result line of each policy is the highest
// throughput whose p99 meets the SLO.
//
// Two workloads. "sleep": each request carries a service time drawn by the
// client from -dist with mean -service, and the server's worker waits
// that long (sleeping workers, so a 2-core machine can emulate several
// workers honestly); the policies are erpc's dispatch of background
// requests to its workers (jbsq: one shared queue, any idle worker takes
// the oldest; hash: a queue per worker, a session always to the same one),
// with the queue bounded by the SLO (erpc.WithSLO), beside gRPC with as
// many workers. "kv": GET/SET on examples/kv's store with a read/write
// mix; erpc's handlers inline on the event loop ("inline") or on workers,
// beside gRPC; the server process gets 1 or 2 cores (-server-procs).

// sloContestant is one policy's or peer's server and client.
type sloContestant struct {
	name   string // jbsq, hash, inline or grpc
	system string // erpc or grpc
	srv    *proc.Server
	target openloop.Target
	close  func()
	svcNs  int64 // the mean service time erpc's WithSLO was given
}

func (k *sloContestant) Stop() {
	if k.close != nil {
		k.close()
	}
	if k.srv != nil {
		k.srv.Stop()
	}
}

// sloCase is one sweep: a service-time distribution, or a kv mix.
type sloCase struct {
	dist string // as in -dist, or "kv-r95" for a mix
	mix  int    // kv: percent GETs
}

func (sc *sloConfig) cases() []sloCase {
	if sc.workload == "kv" {
		var cs []sloCase
		for _, m := range sc.mixes {
			cs = append(cs, sloCase{dist: fmt.Sprintf("kv-r%d", m), mix: m})
		}
		return cs
	}
	var cs []sloCase
	for _, d := range sc.dists {
		cs = append(cs, sloCase{dist: d})
	}
	return cs
}

// offered lists a sweep's rates in requests per second.
func (sc *sloConfig) offered() []float64 {
	if len(sc.qps) > 0 {
		return sc.qps
	}
	var out []float64
	for _, l := range sc.loads {
		out = append(out, l*sc.capacity())
	}
	return out
}

// capacity is workers/S: the throughput of busy workers.
func (sc *sloConfig) capacity() float64 {
	return float64(sc.workers) / sc.service.Seconds()
}

// Run runs the slo scenario: every sweep (distribution or mix, server
// cores) on every contestant.
func Run(b *scenario.Bench) error {
	sc := b.Cfg.Ext.(*sloConfig)
	cases := sc.cases()
	rates := sc.offered()
	names := b.Cfg.Systems
	b.Out.Expect(len(sc.procs) * len(cases) * len(rates) * len(names))
	for _, procs := range sc.procs {
		var ks []*sloContestant
		for _, n := range names {
			k, err := startSLO(b, n, procs)
			if err != nil {
				b.Fail(n, err)
				continue
			}
			defer k.Stop()
			ks = append(ks, k)
		}
		if len(ks) == 0 {
			continue
		}
		cores := sloCores(b, procs)
		for ci, cs := range cases {
			t := &sloTable{b: b, sc: sc, cs: cs, procs: procs, cores: cores, ks: ks}
			for i, rate := range rates {
				// Each point has its own arrivals and draws (a seed of its
				// own: with one seed, every point would be the same
				// sequence scaled, and share its luck), the same for
				// every contestant (common random numbers).
				seed := sc.seed*1_000_003 + uint64(ci)*1009 + uint64(i)
				row := make([]report.Record, len(ks))
				for j := range ks {
					k := (i + j) % len(ks) // alternate who goes first
					row[k] = measureSLO(b, ks[k], cs, procs, cores, rate, seed)
				}
				t.Add(row)
			}
			t.Finish()
		}
		for _, k := range ks {
			k.Stop()
		}
	}
	b.Out.ClearBar()
	return b.Err()
}

// sloCores says where the processes run.
func sloCores(b *scenario.Bench, procs int) string {
	if b.SrvCPU < 0 {
		return "unpinned"
	}
	if procs <= 1 {
		return "server=0 client=1"
	}
	cpus := make([]string, min(procs, proc.NumCPU()))
	for i := range cpus {
		cpus[i] = strconv.Itoa(i)
	}
	return "server=" + strings.Join(cpus, ",") + " client=1"
}

// startSLO starts a contestant's server process and its client.
func startSLO(b *scenario.Bench, name string, procs int) (*sloContestant, error) {
	sc := b.Cfg.Ext.(*sloConfig)
	defer meter.Watchdog("starting "+name, 60*time.Second)()
	k := &sloContestant{name: name, system: "erpc"}
	if name == "grpc" {
		k.system = "grpc"
	}
	srv, err := proc.Start(proc.Config{System: "slo", Transport: "udp", CPU: b.SrvCPU})
	if err != nil {
		return nil, err
	}
	k.srv = srv
	svc := sc.service
	if sc.workload == "kv" {
		svc = 0 // the server measures it
	}
	st := sloStart{system: k.system, policy: name, workload: sc.workload, workers: sc.workers, slo: sc.slo,
		svc: svc, procs: procs, pinned: b.SrvCPU >= 0, keys: sc.keys, window: sc.window, sloQueue: sc.sloQueue, spin: sc.spin}
	reply, err := srv.Ctl(st.line())
	if err != nil {
		k.Stop()
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	var addr string
	if _, err := fmt.Sscan(reply, &addr, &k.svcNs); err != nil {
		k.Stop()
		return nil, fmt.Errorf("server's reply %q: %w", reply, err)
	}
	switch k.system {
	case "erpc":
		t, err := newErpcSLOTarget(addr, sc)
		if err != nil {
			k.Stop()
			return nil, err
		}
		k.target, k.close = t, t.Close
	case "grpc":
		t, err := newGRPCSLOTarget(addr, sc)
		if err != nil {
			k.Stop()
			return nil, err
		}
		k.target, k.close = t, t.Close
		if err := t.warm(); err != nil {
			k.Stop()
			return nil, fmt.Errorf("grpc: %w", err)
		}
	}
	return k, nil
}

// newDraw returns the generator's per-lane chooser of what each request
// asks for.
func (sc *sloConfig) newDraw(cs sloCase) func(rng *rand.Rand) func(c *openloop.Call) {
	if sc.workload != "kv" {
		return func(rng *rand.Rand) func(c *openloop.Call) {
			return func(c *openloop.Call) { c.Svc = openloop.DrawService(cs.dist, sc.service, rng) }
		}
	}
	return func(rng *rand.Rand) func(c *openloop.Call) {
		var z *rand.Zipf
		if sc.keyDist == "zipf" {
			z = rand.NewZipf(rng, sc.zipfS, 1, uint64(sc.keys-1))
		}
		return func(c *openloop.Call) {
			if z != nil {
				c.Key = int(z.Uint64())
			} else {
				c.Key = rng.IntN(sc.keys)
			}
			c.Get = rng.IntN(100) < cs.mix
			c.Vlen = kv.MinValue + rng.IntN(kv.MaxValue-kv.MinValue+1)
		}
	}
}

// measureSLO runs one point on one contestant.
// measureSLO runs one point on one contestant, again while it comes out
// invalid, up to -retries more times (a point is invalid when the machine
// held up the generator or the server's emulation: measuring it again is
// what a benchmark on a shared machine can do about it). The row says how
// many attempts it took; the last one is reported.
func measureSLO(b *scenario.Bench, k *sloContestant, cs sloCase, procs int, cores string, rate float64, seed uint64) report.Record {
	sc := b.Cfg.Ext.(*sloConfig)
	for attempt := 1; ; attempt++ {
		j := measureSLOOnce(b, k, cs, procs, cores, rate, seed)
		if j.Extra["valid"] == true || attempt > sc.retries {
			j.Extra["attempts"] = attempt
			b.Out.Done++
			return j
		}
	}
}

func measureSLOOnce(b *scenario.Bench, k *sloContestant, cs sloCase, procs int, cores string, rate float64, seed uint64) report.Record {
	sc := b.Cfg.Ext.(*sloConfig)
	b.Out.SloProgress(fmt.Sprintf("%s %s %.0f/s", k.name, cs.dist, rate))
	defer meter.Watchdog(fmt.Sprintf("slo %s %s %.0f/s", k.name, cs.dist, rate), b.Cfg.Warmup+b.Cfg.Dur+sc.drain+60*time.Second)()
	k.srv.Ctl("peak") // reset the server's heap peak
	st := openloop.Run(k.target, openloop.Plan{Rate: rate, Lanes: sc.endpoints, Sessions: sc.sessions,
		Warmup: b.Cfg.Warmup, Dur: b.Cfg.Dur, Drain: sc.drain, Seed: seed, NewDraw: sc.newDraw(cs), Resolution: sc.slo / sloResolutionDiv})
	var heapPeak, rss int64 = -1, -1
	if r, err := k.srv.Ctl("peak"); err == nil {
		fmt.Sscan(r, &heapPeak, &rss)
	}
	// A short pause, so that what the point left behind (a server still
	// working off a queue) is not the next point's.
	time.Sleep(50 * time.Millisecond)
	return sloRecord(sc, k, cs, procs, cores, &st, heapPeak, rss)
}

// sloInf stands for an infinite latency in JSON, which has no infinity:
// the largest float64, so that a reader comparing it with a target gets
// the right answer.
const sloInf = math.MaxFloat64

func sloUs(ns float64) float64 {
	switch {
	case math.IsInf(ns, 1):
		return sloInf
	case math.IsNaN(ns):
		return 0
	}
	return report.Round3(ns / 1e3)
}

// sloRecord is a point's JSON row: the contract's fields, then the
// scenario's.
func sloRecord(sc *sloConfig, k *sloContestant, cs sloCase, procs int, cores string, st *openloop.Stats, heapPeak, rss int64) report.Record {
	size, resp := max(sc.size, 8), 8
	tr := "udp"
	if k.system == "grpc" {
		tr = "tcp"
	}
	if sc.workload == "kv" {
		// Mean bytes per request and response for the mix (values of 288
		// bytes on average).
		r := float64(cs.mix) / 100
		size = int(math.Round(r*kv.KeySize + (1-r)*(kv.KeySize+288)))
		resp = int(math.Round(r * 288))
	}
	valid, why := openloop.Valid(st, sc.slo)
	j := report.Record{
		Scenario: "slo", System: k.system, Transport: tr, Size: size, RespSize: resp,
		Concurrency: 0, Sessions: sc.endpoints * sc.sessions, DurationS: report.Round3(st.Secs),
		Ops: st.Ok, Errors: st.Errs + st.Lost,
		QPS:  report.Round3(st.QPS()),
		Gbps: report.Round3(st.QPS() * float64(size+resp) * 8 / 1e9),
		P50:  sloUs(st.Quantile(0.5)), P90: sloUs(st.Quantile(0.9)),
		P99: sloUs(st.Quantile(0.99)), P999: sloUs(st.Quantile(0.999)),
		AllocsPerOp: -1, Cores: cores,
		MeanUs: sloUs(st.Lat.Mean()), MaxUs: sloUs(float64(st.Lat.Max)),
	}
	if st.FirstErr != nil {
		j.Error = st.FirstErr.Error()
	}
	e := map[string]any{
		"kind":              "point",
		"policy":            k.name,
		"dist":              cs.dist,
		"workers":           sc.workers,
		"workload":          sc.workload,
		"offered_qps":       report.Round3(st.Rate),
		"nack_frac":         report.Round3(st.NackFrac()*1e4) / 1e4,
		"nacks":             st.Nacks,
		"lost":              st.Lost,
		"planned":           st.Planned,
		"valid":             valid,
		"lag_p50_us":        sloUs(st.Lag.Quantile(0.5)),
		"lag_p99_us":        sloUs(st.Lag.Quantile(0.99)),
		"iat_ad":            report.Round3(st.IAT.AD),
		"iat_n":             st.IAT.N,
		"iat_below":         report.Round3(st.IAT.Below),
		"iat_below_poisson": report.Round3(st.IAT.Want),
		"iat_z":             report.Round3(st.IAT.Z),
		"iat_ad_planned":    report.Round3(st.IATPlanned.AD),
		"slo_us":            report.Round3(float64(sc.slo) / 1e3),
		"p99_admitted_us":   sloUs(st.Lat.Quantile(0.99)),
		"server_procs":      procs,
		"endpoints":         sc.endpoints,
		"p99_inf":           math.IsInf(st.Quantile(0.99), 1),
	}
	if !valid {
		e["invalid_reason"] = why
	}
	if heapPeak >= 0 {
		e["srv_heap_peak_bytes"] = heapPeak
		e["srv_rss_bytes"] = rss
	}
	if sc.workload == "kv" {
		e["read_pct"] = cs.mix
		e["keydist"] = sc.keyDist
	} else {
		e["load"] = report.Round3(st.Rate / sc.capacity())
		e["service_us"] = report.Round3(float64(sc.service) / 1e3)
		e["served_mean_us"] = sloUs(st.Served.Mean())
		e["svc_over_p50_us"] = sloUs(st.Over.Quantile(0.5))
		e["svc_over_p99_us"] = sloUs(st.Over.Quantile(0.99))
	}
	if k.system == "erpc" {
		e["sloqueue"] = sc.sloQueue && k.name != "inline"
		if sc.workload == "kv" && k.name != "inline" {
			e["kv_service_ns"] = k.svcNs
		}
	}
	j.Extra = e
	return j
}
