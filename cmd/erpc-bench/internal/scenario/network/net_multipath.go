//go:build linux

package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"
	"github.com/erpc-go/erpc/transport/udp"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
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
	dst := uint16(sink.UdpPort)
	pathsOf := tp.ClientPathsOf
	if r.system == "grpc" {
		dst, pathsOf = uint16(sink.TcpPort), tp.TCPPathsOf
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

// mpClient is what a run measures with: a bulk caller and a small caller.
type mpClient struct {
	bulk  func(ctx context.Context, req []byte) error
	small func(ctx context.Context, req []byte) error
	stats func() erpc.Stats
	close func()
}

func startMPClient(b *scenario.Bench, tp *testnet.TwoPath, sink *testbed.Sink, r *mpRun) (*mpClient, error) {
	nc := b.Cfg.Ext.(*netConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.system == "grpc" {
		g, err := newGRPCSender(tp.A, sink.TcpAddr(), &net.TCPAddr{Port: int(r.ports[0])}, 32, 32)
		if err != nil {
			return nil, err
		}
		call := func(ctx context.Context, req []byte) error {
			var resp systems.RawMsg
			err := g.conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: req}, &resp)
			if err == nil && len(resp.B) != 32 {
				err = meter.ErrShortResponse
			}
			return err
		}
		return &mpClient{bulk: call, small: call, close: g.Close}, nil
	}
	var ep *erpc.Endpoint
	err := testnet.In(tp.A, func() error {
		var extra []int
		for _, p := range r.ports[1:] {
			extra = append(extra, int(p))
		}
		// Bound to the Client address (one host on every path), whose
		// loopback MTU would make the transport pick 64 KiB datagrams:
		// the links' MTU is 1500.
		u, err := udp.Listen(net.JoinHostPort(tp.Client.String(), strconv.Itoa(int(r.ports[0]))),
			udp.Options{Paths: r.paths, PathPorts: extra, PacketSize: 1472})
		if err != nil {
			return err
		}
		opts := append(systems.ErpcOptions(false, nc.window), erpc.WithTransport(u))
		if r.system == "erpc-spray" {
			opts = append(opts, erpc.WithBlindSpray())
		}
		ep, err = erpc.Listen("", opts...)
		if err != nil {
			u.Close()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	target := sink.UdpAddr()
	s1, err := ep.Dial(ctx, target)
	if err != nil {
		ep.Close()
		return nil, err
	}
	s2, err := ep.Dial(ctx, target)
	if err != nil {
		ep.Close()
		return nil, err
	}
	mk := func(s *erpc.Session) func(context.Context, []byte) error {
		return func(ctx context.Context, req []byte) error {
			out, err := s.Call(ctx, "Sink", req, make([]byte, 0, 32))
			if err == nil && len(out) != 32 {
				err = meter.ErrShortResponse
			}
			return err
		}
	}
	return &mpClient{bulk: mk(s1), small: mk(s2), stats: ep.Stats,
		close: func() { s1.Close(); s2.Close(); ep.Close() }}, nil
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
		"paths":        r.paths,
		"path":         pathArg,
		"ports":        r.ports,
		"port_paths":   r.hashed,
		"path_gbps":    pathGbps, // wire bytes out of each path (link counters)
		"path_drops":   drops,
		"retransmits":  rexmit,
		"small_size":   nc.small,
		"small_ops":    smallOps,
		"slow_mbit":    report.Round3(float64(nc.slow) / 1e6),
		"fast_mbit":    report.Round3(float64(nc.fast) / 1e6),
		"queue_limit":  nc.limit,
		"small_errors": smallErrs.Load(),
		"bulk_p50_us":  us(bulkH.Quantile(0.5)),
		"bulk_p99_us":  us(bulkH.Quantile(0.99)),
		"bulk_max_us":  us(float64(bulkH.Max)),
	}
	return j, nil
}

// mpTable prints a row per run, then the ratios the issue sets targets
// for.
type mpTable struct {
	b         *scenario.Bench
	nc        *netConfig
	headerOut bool
	rows      []report.Record
}

var mpCols = []string{"Gb/s", "path0", "path1", "small P50", "P99", "P99.9", "rexmit", "drops0", "drops1"}

func (t *mpTable) Add(j report.Record) {
	o := t.b.Out
	o.Done++
	t.rows = append(t.rows, j)
	// The ratios need every row; JSON rows are written at the end.
	if o.Cfg.Json {
		return
	}
	o.ClearBar()
	if !t.headerOut {
		t.headerOut = true
		nc := t.nc
		fmt.Fprintf(o.W, "# multipath: one session streaming %s calls (%d in flight), one %dB call at a time on a second session; path 0 shaped to %.0f Mbit/s, path 1 to %.0f Mbit/s, queue %s each; %v per system after %v warm-up; cores %s\n",
			report.HumanSize(nc.size), nc.conc, nc.small, float64(nc.slow)/1e6, float64(nc.fast)/1e6, report.HumanSize(nc.limit), o.Cfg.Dur, o.Cfg.Warmup, o.Cores)
		var h, sep strings.Builder
		h.WriteString("| system     | paths | ports (path)         |")
		sep.WriteString("|------------|-------|----------------------|")
		report.HeaderCells(&h, &sep, mpCols, report.ColW)
		fmt.Fprintln(o.W, h.String())
		fmt.Fprintln(o.W, sep.String())
	}
	e := j.Extra
	var ports []string
	hashed := e["port_paths"].([]int)
	for i, p := range e["ports"].([]uint16) {
		ports = append(ports, fmt.Sprintf("%d(%d)", p, hashed[i]))
	}
	pg := e["path_gbps"].([2]float64)
	dr := e["path_drops"].([2]uint64)
	cells := []string{fmt.Sprintf("%.3f", j.Gbps), fmt.Sprintf("%.3f", pg[0]), fmt.Sprintf("%.3f", pg[1]),
		report.HumanUs(j.P50), report.HumanUs(j.P99), report.HumanUs(j.P999), fmt.Sprint(e["retransmits"]), fmt.Sprint(dr[0]), fmt.Sprint(dr[1])}
	var r strings.Builder
	fmt.Fprintf(&r, "| %-10s | %5d | %-20s |", j.System, e["paths"], report.TrimTo(strings.Join(ports, " "), 20))
	for _, c := range cells {
		fmt.Fprintf(&r, " %*s |", report.ColW, c)
	}
	fmt.Fprintln(o.W, r.String())
	if j.Error != "" || j.Errors > 0 {
		fmt.Fprintf(o.W, "#   %s: %d failed calls; first: %s\n", j.System, j.Errors, j.Error)
	}
}

// Finish adds the ratios to the erpc rows and prints them (or writes the
// JSON rows).
func (t *mpTable) Finish() {
	o := t.b.Out
	var one []float64
	spray := map[int]float64{}
	for _, j := range t.rows {
		switch j.System {
		case "erpc-1path":
			one = append(one, j.Gbps)
		case "erpc-spray":
			spray[j.Extra["paths"].(int)] = j.Gbps
		}
	}
	oneMean := meter.Mean(one)
	var lines []string
	for i := range t.rows {
		j := &t.rows[i]
		if j.System != "erpc" {
			continue
		}
		k := j.Extra["paths"].(int)
		line := fmt.Sprintf("#   erpc K=%d: %.3f Gb/s", k, j.Gbps)
		if len(one) == 2 && oneMean > 0 {
			r := j.Gbps / oneMean
			j.Extra["vs_1path"] = report.Round3(r)
			line += fmt.Sprintf(", %.2fx the mean single path (%.3f, %.3f: mean %.3f; target >= 1.8: %s)", r, one[0], one[1], oneMean,
				map[bool]string{true: "met", false: "MISSED"}[r >= 1.8])
		}
		if s := spray[k]; s > 0 {
			r := j.Gbps / s
			j.Extra["vs_spray"] = report.Round3(r)
			line += fmt.Sprintf(", %.2fx blind spraying over the same ports (%.3f; target >= 2.5: %s)", r, s,
				map[bool]string{true: "met", false: "MISSED"}[r >= 2.5])
		}
		lines = append(lines, line)
	}
	for _, j := range t.rows {
		o.Results = append(o.Results, j)
		if o.Cfg.Json {
			bs, _ := json.Marshal(j)
			fmt.Fprintf(o.W, "%s\n", bs)
		}
	}
	if !o.Cfg.Json {
		o.ClearBar()
		for _, l := range lines {
			fmt.Fprintln(o.W, l)
		}
	}
}
