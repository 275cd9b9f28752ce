//go:build linux

package network

import (
	"context"
	"fmt"
	"net"
	"strconv"
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

// The path scenario (issue 33): one shaped path of the two-path testbed
// (path 0, a TBF at each of -rates), one session moving bulk data (-size
// calls back to back, -c in flight), erpc against gRPC over one TCP
// connection (and, with -vs erpc-nocc, erpc without congestion control:
// what the rest of the stack allows); then -sessions sessions sharing the path (erpc: sessions of
// one endpoint; gRPC: one connection each), each making calls of
// -size/-sessions so that each completes as many calls as the single
// session would. Rows carry rate_mbit, gbps (the calls' bytes per
// second), utilization (the path's wire bytes against its rate) and, for
// several sessions, jain (Jain's index of the sessions' completed bytes).

// pathRun is one row: a system, a rate and a number of sessions.
type pathRun struct {
	system   string
	rate     uint64
	sessions int
}

// RunPath runs the path scenario.
func RunPath(b *scenario.Bench) error {
	nc := b.Cfg.Ext.(*netConfig)
	var runs []pathRun
	for _, rate := range nc.rates {
		for _, n := range []int{1, nc.sessions} {
			for _, s := range b.Cfg.Systems {
				runs = append(runs, pathRun{system: s, rate: rate, sessions: n})
			}
			if nc.sessions == 1 {
				break
			}
		}
	}
	b.Out.Expect(len(runs))
	t := &pathTable{b: b, nc: nc}
	return testbed.Run(b.Out.Ew, func(tb *testbed.TB) error {
		tp := testnet.NewTwoPath(tb, testnet.TwoPathConfig{})
		if nc.boost {
			testnet.Boost(tb)
		}
		sink, err := testbed.StartSink(tp.B, tp.Service, b.SrvCPU, nc.window)
		if err != nil {
			return err
		}
		tb.Cleanup(sink.Stop)
		next := uint16(testnet.SpreadPortsFrom)
		shaped := uint64(0)
		for _, r := range runs {
			if r.rate != shaped {
				tp.ShapePath(tb, 0, testnet.Shape{Rate: r.rate, Burst: mpBurst(r.rate), Limit: nc.limit})
				shaped = r.rate
			}
			mp := mpRun{system: r.system, path: 0, paths: 1}
			if r.system == "grpc" {
				mp.paths = r.sessions // a connection (port) each
			}
			if err := mpPorts(b, tb, tp, sink, &mp, &next); err != nil {
				return err
			}
			b.Out.ProgressStart(fmt.Sprintf("%s %d Mbit/s x%d", r.system, r.rate/1e6, r.sessions), meter.Point{Size: nc.size, Conc: r.sessions})
			j, err := pathMeasure(b, tb, tp, sink, r, mp.ports)
			if err != nil {
				return fmt.Errorf("%s at %d Mbit/s: %w", r.system, r.rate/1e6, err)
			}
			t.Add(j)
		}
		return nil
	})
}

// pathCaller makes one session's calls.
type pathCaller func(ctx context.Context, req []byte) error

// startPathCallers opens the run's sessions: for erpc, sessions of one
// endpoint bound to the port on path 0; for gRPC a connection per port.
func startPathCallers(tp *testnet.TwoPath, sink *testbed.Sink, r pathRun, ports []uint16, window int) ([]pathCaller, func(), error) {
	if r.system == "grpc" {
		var calls []pathCaller
		var closers []func()
		closeAll := func() {
			for _, c := range closers {
				c()
			}
		}
		for _, p := range ports {
			g, err := newGRPCSender(tp.A, sink.TCPAddr(), &net.TCPAddr{Port: int(p)}, 32, 32)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			closers = append(closers, g.Close)
			calls = append(calls, func(ctx context.Context, req []byte) error {
				var resp systems.RawMsg
				err := g.conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: req}, &resp)
				if err == nil && len(resp.B) != 32 {
					err = meter.ErrShortResponse
				}
				return err
			})
		}
		return calls, closeAll, nil
	}
	var ep *erpc.Endpoint
	err := testnet.In(tp.A, func() error {
		u, err := udp.Listen(net.JoinHostPort(tp.Client.String(), strconv.Itoa(int(ports[0]))),
			udp.Options{PacketSize: 1472})
		if err != nil {
			return err
		}
		opts := append(systems.ErpcOptions(false, window), erpc.WithTransport(u), erpc.Insecure())
		if r.system == "erpc-nocc" {
			opts = append(opts, erpc.WithoutCongestionControl())
		}
		ep, err = erpc.Listen("", opts...)
		if err != nil {
			u.Close()
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var calls []pathCaller
	var sessions []*erpc.Session
	closeAll := func() {
		for _, s := range sessions {
			s.Close()
		}
		ep.Close()
	}
	for range r.sessions {
		s, err := ep.Dial(ctx, sink.UDPAddr())
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		sessions = append(sessions, s)
		calls = append(calls, func(ctx context.Context, req []byte) error {
			out, err := s.Call(ctx, "Sink", req, make([]byte, 0, 32))
			if err == nil && len(out) != 32 {
				err = meter.ErrShortResponse
			}
			return err
		})
	}
	return calls, closeAll, nil
}

// pathMeasure runs one row: warm-up, then the measured window.
func pathMeasure(b *scenario.Bench, tb *testbed.TB, tp *testnet.TwoPath, sink *testbed.Sink, r pathRun, ports []uint16) (report.Record, error) {
	nc := b.Cfg.Ext.(*netConfig)
	calls, closeAll, err := startPathCallers(tp, sink, r, ports, nc.window)
	if err != nil {
		return report.Record{}, err
	}
	defer closeAll()
	size := max(nc.size/r.sessions, 1)
	req := meter.Payload(size)
	var phase atomic.Int32
	done := make([]atomic.Int64, len(calls)) // calls completed in the measured window
	var errs atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i, call := range calls {
		for range nc.conc {
			wg.Go(func() {
				for phase.Load() != meter.PhaseStop {
					cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
					err := call(cctx, req)
					ccancel()
					if phase.Load() != meter.PhaseMeasure {
						continue
					}
					if err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					done[i].Add(1)
				}
			})
		}
	}
	time.Sleep(b.Cfg.Warmup)
	q0, err := tp.PathQdisc(0).Stats()
	if err != nil {
		return report.Record{}, err
	}
	l0 := tp.Counters(tb)
	t0 := time.Now()
	phase.Store(meter.PhaseMeasure)
	time.Sleep(b.Cfg.Dur)
	phase.Store(meter.PhaseStop)
	secs := time.Since(t0).Seconds()
	l1 := tp.Counters(tb)
	q1, err := tp.PathQdisc(0).Stats()
	if err != nil {
		return report.Record{}, err
	}
	cancel() // the calls still in flight are not counted
	wg.Wait()

	var ops int64
	per := make([]float64, len(done))
	for i := range done {
		n := done[i].Load()
		ops += n
		per[i] = float64(n)
	}
	tr := map[bool]string{true: "tcp", false: "udp"}[r.system == "grpc"]
	gbps := float64(ops) * float64(size+32) * 8 / secs / 1e9
	wire := float64(l1[0].TxBytes-l0[0].TxBytes) * 8 / secs
	j := report.Record{
		Scenario: "path", System: r.system, Transport: tr,
		Size: size, RespSize: 32, Concurrency: nc.conc, Sessions: r.sessions,
		DurationS: report.Round3(secs), Ops: ops, Errors: errs.Load(),
		QPS: report.Round3(float64(ops) / secs), Gbps: report.Round3(gbps),
		AllocsPerOp: -1, Cores: b.Out.Cores,
	}
	if e, ok := firstErr.Load().(string); ok {
		j.Error = e
	}
	j.Extra = map[string]any{
		"rate_mbit":   report.Round3(float64(r.rate) / 1e6),
		"utilization": report.Round3(wire / float64(r.rate)),
		"wire_gbps":   report.Round3(wire / 1e9),
		"drops":       q1.Sub(q0).Drops,
		"queue_limit": nc.limit,
		"ports":       ports,
	}
	if r.sessions > 1 {
		j.Extra["jain"] = report.Round3(jain(per))
		j.Extra["session_ops"] = per
	}
	return j, nil
}
