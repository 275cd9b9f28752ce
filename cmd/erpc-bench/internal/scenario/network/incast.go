//go:build linux

package network

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// The incast scenario: N client namespaces and a server on a bridge whose
// port toward the server is the bottleneck (testnet.Star: TBF, or HTB with
// -htb). All N senders send -size bytes to the server at once (one call,
// or -size/-chunk calls in flight), R times per system, the systems
// interleaved (erpc with congestion control, erpc without it, gRPC over
// TCP), each incast after the queue has drained. Per row (system, N):
//
//   - utilisation: bytes the bottleneck sent (Ethernet frames, as it counts
//     them) over rate x the incast's duration (start to last answer);
//   - Jain's fairness index of per-sender throughput in 10 ms windows, as
//     the receiver counts bytes per sender address (netsink), over the
//     senders still sending through the whole window; the mean over the
//     windows (jain) and the worst incast's mean (jain_min); an incast with
//     no such window counts the senders' mean rates (size / FCT) instead;
//   - flow completion time (start to the sender's last answer) p50, p99,
//     max over all senders of all R incasts, against the ideal N*M/rate
//     (payload only: headers make even a perfect run ~4 % slower);
//   - retransmissions (erpc: the clients' Stats.Retransmits; gRPC: TCP
//     RetransSegs in the client namespaces), drops at the bottleneck
//     (qdisc counters), the deepest queue (1 ms netlink sampler), calls
//     that failed (error or -timeout).
//
// All senders live in the client process (pinned to CPU 1 with -pin), one
// erpc endpoint or gRPC connection each, opened in its own namespace; the
// server ("netsink") runs in the server namespace, pinned to CPU 0.

const incastWindow = 10 * time.Millisecond

// RunIncast runs the incast scenario: every -senders count on every
// system, in a table (or JSON rows) and, with -plot, the trace.
func RunIncast(b *scenario.Bench) error {
	nc := b.Cfg.Ext.(*netConfig)
	b.Out.Expect(len(nc.senders) * len(b.Cfg.Systems))
	t := &incastTable{b: b, nc: nc}
	for _, n := range nc.senders {
		err := testbed.Run(b.Out.Ew, func(tb *testbed.TB) error { return incastN(b, tb, t, n) })
		if err != nil {
			return err
		}
	}
	t.Finish()
	return b.Err()
}

// incastN runs every system's incasts with n senders on a star of its own.
func incastN(b *scenario.Bench, tb *testbed.TB, t *incastTable, n int) error {
	nc := b.Cfg.Ext.(*netConfig)
	shape := testnet.Shape{Rate: nc.rate, Burst: nc.burst, Limit: nc.limit, HTB: nc.htb}
	star := testnet.NewStar(tb, testnet.StarConfig{Clients: n, Bottleneck: shape})
	if nc.boost {
		testnet.Boost(tb)
	}
	sink, err := testbed.StartSink(star.Server, star.ServerAddr, b.SrvCPU, nc.window)
	if err != nil {
		return err
	}
	tb.Cleanup(sink.Stop)

	var contestants []*incastSystem
	defer func() {
		for _, s := range contestants {
			s.Close()
		}
	}()
	for _, name := range b.Cfg.Systems {
		s := &incastSystem{name: name, tr: "udp"}
		contestants = append(contestants, s)
		opts := systems.ErpcOptions(false, nc.window)
		if name == "erpc-nocc" {
			opts = append(opts, erpc.WithoutCongestionControl())
		}
		for i, ns := range star.Clients {
			var x incastSender
			var err error
			if name == "grpc" {
				s.tr = "tcp"
				x, err = newGRPCSender(ns, sink.TCPAddr(), nil, nc.size, nc.chunk)
			} else {
				x, err = newErpcSender(ns, star.ClientAddrs[i], sink.UDPAddr(), nc, opts)
			}
			if err != nil {
				return fmt.Errorf("%s sender %d: %w", name, i, err)
			}
			s.senders = append(s.senders, x)
		}
	}
	ideal := time.Duration(float64(n*nc.size) * 8 / float64(nc.rate) * 1e9)
	// Discarded incasts first (session state, TCP windows, the server's
	// buffers), then the measured ones, the contestants in turn, starting with
	// a different one each round.
	for r := range nc.warm + nc.reps {
		for j := range contestants {
			s := contestants[(j+r)%len(contestants)]
			if r == nc.warm {
				b.Out.ProgressStart(s.name, meter.Point{Size: nc.size, Conc: n})
			}
			bu, err := incastOnce(b, tb, star, sink, s, ideal)
			if err != nil {
				return fmt.Errorf("%s, %d senders: %w", s.name, n, err)
			}
			if r >= nc.warm {
				s.acc.Add(bu, nc.rate)
			}
		}
	}
	for _, s := range contestants {
		t.Add(incastRecord(b, s, n, ideal))
	}
	return nil
}

// incastOnce runs one incast of system s.
func incastOnce(b *scenario.Bench, tb *testbed.TB, star *testnet.Star, sink *testbed.Sink, s *incastSystem, ideal time.Duration) (*incastBurst, error) {
	nc := b.Cfg.Ext.(*netConfig)
	q := star.Bottleneck()
	// Wait for the queue to drain, then for the gap.
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, err := q.Stats()
		if err != nil {
			return nil, err
		}
		if st.Backlog == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the bottleneck's queue did not drain: %v", st)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(nc.gap)
	before, err := q.Stats()
	if err != nil {
		return nil, err
	}
	rex0 := s.retransmits()
	if err := sink.Reset(); err != nil {
		return nil, err
	}
	sm, err := q.StartSampler(time.Millisecond)
	if err != nil {
		return nil, err
	}
	n := len(s.senders)
	bu := &incastBurst{fcts: make([]time.Duration, n)}
	ctx, cancel := context.WithTimeout(context.Background(), nc.timeout)
	defer cancel()
	start := make(chan struct{})
	var t0 time.Time
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, x := range s.senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			calls, failed, err := x.Send(ctx)
			d := time.Since(t0)
			mu.Lock()
			bu.fcts[i] = d
			bu.calls += calls
			bu.failed += failed
			if err != nil && bu.firstErr == nil {
				bu.firstErr = err
			}
			mu.Unlock()
		}()
	}
	time.Sleep(time.Millisecond) // let every sender reach the start line
	t0 = time.Now()
	close(start)
	wg.Wait()
	for _, f := range bu.fcts {
		bu.dur = max(bu.dur, f)
	}
	samples, serr := sm.Stop()
	after, err := q.Stats()
	if err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	for _, x := range samples {
		bu.maxQueue = max(bu.maxQueue, x.Backlog)
	}
	d := after.Sub(before)
	bu.qbytes, bu.drops = d.Bytes, d.Drops
	bu.rexmit = s.retransmits() - rex0
	nb, err := sink.Bins()
	if err != nil {
		return nil, err
	}
	nwin := int((bu.dur + incastWindow - 1) / incastWindow)
	bytes := windows(nb, t0, star.ClientAddrs, nwin)
	bu.jains = fairness(bytes, bu.fcts)
	if len(bu.jains) == 0 {
		// An incast shorter than two windows: each sender's mean rate
		// over its own completion time instead.
		rates := make([]float64, n)
		for i, f := range bu.fcts {
			rates[i] = float64(nc.size) / max(f.Seconds(), 1e-9)
		}
		bu.jains = []float64{jain(rates)}
	}
	bu.trace = make([][]float64, n)
	for i := range bytes {
		bu.trace[i] = make([]float64, nwin)
		for w, v := range bytes[i] {
			bu.trace[i][w] = report.Round3(v * 8 / incastWindow.Seconds() / 1e6)
		}
	}
	return bu, nil
}
