//go:build linux

package network

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// The multipath scenario: a client namespace and a server namespace joined
// by two links (testnet.TwoPath: ECMP over the UDP 5-tuple with a fixed
// hash seed), path 0 shaped to -slow and path 1 to -fast (by default a
// fifth of it). One client endpoint streams -size calls (-c in flight, 32
// byte answers) on one session, and makes one small call at a time
// (-small bytes) on a second session beside it. Per system:
//
//   - erpc-1path: one source port, chosen (ClientPathsOf) to hash onto
//     path 0, then one onto path 1: a row each; their mean is what a
//     session gets from ECMP hashing on average;
//   - erpc-spray: K source ports alternating between the paths (K from
//     -paths), packets sprayed over them round robin (erpc.WithBlindSpray);
//   - erpc: the same K ports with the path choice (less queued of two);
//   - grpc: one TCP connection, from a port that hashes onto path 0, then
//     one onto path 1.
//
// Rows carry gbps (bulk request and response bytes per second), ops and qps
// of the bulk calls, and p50..p999 of the small calls; extras give the
// bytes each path carried (link counters), the drops at each path's
// shaper, the client's retransmissions and, on the erpc rows, the ratios
// to the mean single path and to blind spraying (the targets).

type mpRun struct {
	system string
	path   int // erpc-1path and grpc: the path; -1 for several
	paths  int // source ports
	ports  []uint16
	hashed []int // the path of each port
}

// RunMultipath runs the multipath scenario: each system's runs on the
// two-path testbed.
func RunMultipath(b *scenario.Bench) error {
	nc := b.Cfg.Ext.(*netConfig)
	var runs []mpRun
	for _, s := range b.Cfg.Systems {
		switch s {
		case "erpc-1path", "grpc":
			runs = append(runs, mpRun{system: s, path: 0, paths: 1}, mpRun{system: s, path: 1, paths: 1})
		default:
			for _, k := range nc.paths {
				runs = append(runs, mpRun{system: s, path: -1, paths: k})
			}
		}
	}
	b.Out.Expect(len(runs))
	t := &mpTable{b: b, nc: nc}
	err := testbed.Run(b.Out.Ew, func(tb *testbed.TB) error {
		tp := testnet.NewTwoPath(tb, testnet.TwoPathConfig{})
		for i, rate := range []uint64{nc.slow, nc.fast} {
			tp.ShapePath(tb, i, testnet.Shape{Rate: rate, Burst: mpBurst(rate), Limit: nc.limit})
		}
		if nc.boost {
			testnet.Boost(tb)
		}
		sink, err := testbed.StartSink(tp.B, tp.Service, b.SrvCPU, nc.window)
		if err != nil {
			return err
		}
		tb.Cleanup(sink.Stop)
		next := uint16(testnet.SpreadPortsFrom)
		for i := range runs {
			r := &runs[i]
			if err := mpPorts(b, tb, tp, sink, r, &next); err != nil {
				return err
			}
			b.Out.ProgressStart(fmt.Sprintf("%s K=%d", r.system, r.paths), meter.Point{Size: nc.size, Conc: nc.conc})
			j, err := mpMeasure(b, tb, tp, sink, r)
			if err != nil {
				return fmt.Errorf("%s: %w", r.system, err)
			}
			t.Add(j)
		}
		return nil
	})
	t.Finish()
	return err
}

// mpCapacity is the rate, in bits/s, of the paths run r uses: its one
// path's, or both paths' sum.
func mpCapacity(nc *netConfig, r *mpRun) float64 {
	switch r.path {
	case 0:
		return float64(nc.slow)
	case 1:
		return float64(nc.fast)
	}
	return float64(nc.slow + nc.fast)
}

// mpBurst is a path shaper's burst: 2 ms of its rate, at least 16 KiB (a
// shaper whose timer runs late loses the tokens beyond its burst).
func mpBurst(rate uint64) int { return max(16<<10, int(rate/8/500)) }

// mpPorts picks the run's source ports: fresh ones (a port just closed
// may still have a connection in TIME_WAIT) from *next up, alternating
// between the paths, or all on r.path.
func mpPorts(b *scenario.Bench, tb *testbed.TB, tp *testnet.TwoPath, sink *testbed.Sink, r *mpRun, next *uint16) error {
	want := make([]int, r.paths)
	for i := range want {
		want[i] = i % 2
		if r.path >= 0 {
			want[i] = r.path
		}
	}
	dst := uint16(sink.UDPPort)
	pathsOf := tp.ClientPathsOf
	if r.system == "grpc" {
		dst, pathsOf = uint16(sink.TCPPort), tp.TCPPathsOf
	}
	r.ports, r.hashed = nil, nil
	for len(r.ports) < r.paths {
		if *next > 65000 {
			return fmt.Errorf("no source ports left")
		}
		cand := make([]uint16, 64)
		for i := range cand {
			cand[i] = *next + uint16(i)
		}
		*next += 64
		got, err := pathsOf(dst, cand...)
		if err != nil {
			return err
		}
		for i, p := range got {
			if len(r.ports) < r.paths && p == want[len(r.ports)] {
				r.ports = append(r.ports, cand[i])
				r.hashed = append(r.hashed, p)
			}
		}
	}
	return nil
}

// mpMeasure runs one system: warm-up, then the measured window.
func mpMeasure(b *scenario.Bench, tb *testbed.TB, tp *testnet.TwoPath, sink *testbed.Sink, r *mpRun) (report.Record, error) {
	nc := b.Cfg.Ext.(*netConfig)
	cfg := b.Cfg
	c, err := startMPClient(b, tp, sink, r)
	if err != nil {
		return report.Record{}, err
	}
	defer c.close()
	var phase atomic.Int32 // phaseWarm, phaseMeasure, phaseStop
	var bulkOps, bulkErrs, smallErrs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		firstErr.CompareAndSwap(nil, err.Error())
	}
	var h meter.Hist
	var bmu sync.Mutex
	var bulkH meter.Hist // the bulk calls' latency
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	big := meter.Payload(nc.size)
	for range nc.conc {
		wg.Go(func() {
			for phase.Load() != meter.PhaseStop {
				t0 := time.Now()
				cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
				err := c.bulk(cctx, big)
				ccancel()
				if phase.Load() != meter.PhaseMeasure {
					continue
				}
				if err != nil {
					bulkErrs.Add(1)
					fail(err)
				} else {
					bulkOps.Add(1)
					bmu.Lock()
					bulkH.Record(time.Since(t0))
					bmu.Unlock()
				}
			}
		})
	}
	smallReq := meter.Payload(nc.small)
	var smallOps int64
	wg.Go(func() {
		for phase.Load() != meter.PhaseStop {
			t0 := time.Now()
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.small(cctx, smallReq)
			ccancel()
			if phase.Load() != meter.PhaseMeasure {
				continue
			}
			if err != nil {
				smallErrs.Add(1)
				fail(err)
				continue
			}
			h.Record(time.Since(t0))
			smallOps++
		}
	})
	time.Sleep(cfg.Warmup)
	var st0 erpc.Stats
	if c.stats != nil {
		st0 = c.stats()
	}
	q0 := [2]testnet.QdiscStats{}
	for i := range 2 {
		if q0[i], err = tp.PathQdisc(i).Stats(); err != nil {
			return report.Record{}, err
		}
	}
	l0 := tp.Counters(tb)
	t0 := time.Now()
	phase.Store(meter.PhaseMeasure)
	time.Sleep(cfg.Dur)
	phase.Store(meter.PhaseStop)
	secs := time.Since(t0).Seconds()
	l1 := tp.Counters(tb)
	var drops [2]uint64
	for i := range 2 {
		q, err := tp.PathQdisc(i).Stats()
		if err != nil {
			return report.Record{}, err
		}
		drops[i] = q.Sub(q0[i]).Drops
	}
	var rexmit uint64
	if c.stats != nil {
		rexmit = c.stats().Retransmits - st0.Retransmits
	}
	// The calls still in flight are not counted: cancel them.
	cancel()
	wg.Wait()

	ops := bulkOps.Load()
	tr := "udp"
	if r.system == "grpc" {
		tr = "tcp"
	}
	us := func(ns float64) float64 { return report.Round3(ns / 1e3) }
	j := report.Record{
		Scenario: "multipath", System: r.system, Transport: tr,
		Size: nc.size, RespSize: 32, Concurrency: nc.conc, Sessions: 2,
		DurationS: report.Round3(secs), Ops: ops, Errors: bulkErrs.Load() + smallErrs.Load(),
		QPS: report.Round3(float64(ops) / secs), Gbps: report.Round3(float64(ops) * float64(nc.size+32) * 8 / secs / 1e9),
		P50: us(h.Quantile(0.5)), P90: us(h.Quantile(0.9)), P99: us(h.Quantile(0.99)), P999: us(h.Quantile(0.999)),
		AllocsPerOp: -1, Cores: b.Out.Cores, MeanUs: us(h.Mean()), MaxUs: us(float64(h.Max)),
	}
	if e, ok := firstErr.Load().(string); ok {
		j.Error = e
	}
	pathGbps := [2]float64{}
	for i := range 2 {
		pathGbps[i] = report.Round3(float64(l1[i].TxBytes-l0[i].TxBytes) * 8 / secs / 1e9)
	}
	pathArg := any(r.path)
	if r.path < 0 {
		pathArg = "all"
	}
	j.Extra = map[string]any{
		"paths":       r.paths,
		"path":        pathArg,
		"ports":       r.ports,
		"port_paths":  r.hashed,
		"path_gbps":   pathGbps, // wire bytes out of each path (link counters)
		"path_drops":  drops,
		"retransmits": rexmit,
		"small_size":  nc.small,
		"small_ops":   smallOps,
		"slow_mbit":   report.Round3(float64(nc.slow) / 1e6),
		// What the paths the run used can carry, the bar of its gbps.
		"capacity_gbps": report.Round3(mpCapacity(nc, r) / 1e9),
		"fast_mbit":     report.Round3(float64(nc.fast) / 1e6),
		"queue_limit":   nc.limit,
		"small_errors":  smallErrs.Load(),
		"bulk_p50_us":   us(bulkH.Quantile(0.5)),
		"bulk_p99_us":   us(bulkH.Quantile(0.99)),
		"bulk_max_us":   us(float64(bulkH.Max)),
	}
	return j, nil
}
