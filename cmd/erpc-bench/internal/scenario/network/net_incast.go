//go:build linux

package network

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

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

// incastSender is one sender of one system.
type incastSender interface {
	// send sends the sender's bytes and waits for the answers; failed is
	// the number of calls that failed, err the first failure.
	Send(ctx context.Context) (calls, failed int, err error)
	retransmits() uint64
	Close()
}

type incastSystem struct {
	name    string
	tr      string
	senders []incastSender
	acc     incastAcc
}

func (s *incastSystem) Close() {
	for _, x := range s.senders {
		x.Close()
	}
}

func (s *incastSystem) retransmits() uint64 {
	var n uint64
	for _, x := range s.senders {
		n += x.retransmits()
	}
	return n
}

// erpcSender is one erpc client endpoint with one session to the server.
type erpcSender struct {
	ep    *erpc.Endpoint
	sess  *erpc.Session
	req   []byte
	chunk int
	resp  [][]byte
}

func newErpcSender(ns string, addr netip.Addr, target string, nc *netConfig, opts []erpc.Option) (*erpcSender, error) {
	s := &erpcSender{req: meter.Payload(nc.size), chunk: nc.chunk}
	for range nc.size / nc.chunk {
		s.resp = append(s.resp, make([]byte, 0, 32))
	}
	err := testnet.In(ns, func() (err error) {
		s.ep, err = erpc.Listen(net.JoinHostPort(addr.String(), "0"), opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.sess, err = s.ep.Dial(ctx, target); err != nil {
		s.ep.Close()
		return nil, fmt.Errorf("dial %s from %s: %w", target, ns, err)
	}
	return s, nil
}

func (s *erpcSender) call(ctx context.Context, i int) error {
	out, err := s.sess.Call(ctx, "Sink", s.req[i*s.chunk:(i+1)*s.chunk], s.resp[i][:0])
	if err == nil && len(out) != 32 {
		err = meter.ErrShortResponse
	}
	return err
}

func (s *erpcSender) Send(ctx context.Context) (int, int, error) {
	return sendChunks(ctx, len(s.resp), s.call)
}

// sendChunks makes n calls at once and waits for them.
func sendChunks(ctx context.Context, n int, call func(context.Context, int) error) (int, int, error) {
	if n == 1 {
		if err := call(ctx, 0); err != nil {
			return 1, 1, err
		}
		return 1, 0, nil
	}
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- call(ctx, i) }()
	}
	failed := 0
	var first error
	for range n {
		if err := <-errs; err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return n, failed, first
}

func (s *erpcSender) retransmits() uint64 { return s.ep.Stats().Retransmits }

func (s *erpcSender) Close() {
	s.sess.Close()
	s.ep.Close()
}

// grpcSender is one gRPC connection, its TCP socket opened in the
// sender's namespace.
type grpcSender struct {
	ns    string
	conn  *grpc.ClientConn
	req   []byte
	chunk int
}

// dialIn returns a gRPC dialer whose sockets belong to namespace ns.
func dialIn(ns string, local *net.TCPAddr) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := testnet.In(ns, func() (err error) {
			d := net.Dialer{LocalAddr: local}
			c, err = d.DialContext(ctx, "tcp4", addr)
			return err
		})
		return c, err
	}
}

func newGRPCSender(ns, target string, local *net.TCPAddr, size, chunk int) (*grpcSender, error) {
	conn, err := grpc.NewClient("passthrough:///"+target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialIn(ns, local)),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(systems.GrpcRawCodec{}.Name()),
			grpc.MaxCallRecvMsgSize(systems.GrpcMaxMsg), grpc.MaxCallSendMsgSize(systems.GrpcMaxMsg)))
	if err != nil {
		return nil, err
	}
	s := &grpcSender{ns: ns, conn: conn, req: meter.Payload(size), chunk: chunk}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp systems.RawMsg
	if err := conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: s.req[:32]}, &resp); err != nil {
		conn.Close()
		return nil, fmt.Errorf("grpc to %s from %s: %w", target, ns, err)
	}
	return s, nil
}

func (s *grpcSender) Send(ctx context.Context) (int, int, error) {
	return sendChunks(ctx, len(s.req)/s.chunk, func(ctx context.Context, i int) error {
		var resp systems.RawMsg
		err := s.conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: s.req[i*s.chunk : (i+1)*s.chunk]}, &resp)
		if err == nil && len(resp.B) != 32 {
			err = meter.ErrShortResponse
		}
		return err
	})
}

func (s *grpcSender) retransmits() uint64 {
	n, _ := tcpRetransSegs(s.ns)
	return n
}

func (s *grpcSender) Close() { s.conn.Close() }

// tcpRetransSegs reads TCP's RetransSegs counter of namespace ns
// (/proc/thread-self/net/snmp shows the namespace of the reading thread).
func tcpRetransSegs(ns string) (uint64, error) {
	var n uint64
	err := testnet.In(ns, func() error {
		f, err := os.Open("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		defer f.Close()
		var head []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 || fields[0] != "Tcp:" {
				continue
			}
			if head == nil {
				head = fields
				continue
			}
			for i, h := range head {
				if h == "RetransSegs" && i < len(fields) {
					n, _ = strconv.ParseUint(fields[i], 10, 64)
				}
			}
			return nil
		}
		return errors.New("no Tcp: lines in /proc/net/snmp")
	})
	return n, err
}

// incastBurst is what one incast measured.
type incastBurst struct {
	fcts     []time.Duration // per sender
	dur      time.Duration   // start to the last answer
	calls    int
	failed   int
	firstErr error
	qbytes   uint64 // bytes the bottleneck sent
	drops    uint64
	maxQueue uint32
	rexmit   uint64
	jains    []float64   // per 10 ms window
	trace    [][]float64 // per sender, Mbit/s per 10 ms window
}

// incastAcc accumulates a row's incasts.
type incastAcc struct {
	fct      meter.Hist
	n        int
	calls    int
	failed   int
	firstErr error
	qbytes   uint64
	secs     float64
	drops    uint64
	rexmit   uint64
	maxQueue uint32
	jains    []float64 // every window of every incast
	jainMin  float64   // the worst incast's mean
	utilMin  float64
	last     *incastBurst
}

func (a *incastAcc) Add(bu *incastBurst, rate uint64) {
	for _, f := range bu.fcts {
		a.fct.Record(f)
	}
	a.n++
	a.calls += bu.calls
	a.failed += bu.failed
	if a.firstErr == nil {
		a.firstErr = bu.firstErr
	}
	a.qbytes += bu.qbytes
	a.secs += bu.dur.Seconds()
	a.drops += bu.drops
	a.rexmit += bu.rexmit
	a.maxQueue = max(a.maxQueue, bu.maxQueue)
	a.jains = append(a.jains, bu.jains...)
	if j := meter.Mean(bu.jains); a.n == 1 || j < a.jainMin {
		a.jainMin = j
	}
	if u := utilization(bu.qbytes, rate, bu.dur.Seconds()); a.n == 1 || u < a.utilMin {
		a.utilMin = u
	}
	a.last = bu
}

func utilization(bytes, rate uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) * 8 / (float64(rate) * secs)
}

// jain is Jain's fairness index of x: (sum x)^2 / (n sum x^2).
func jain(x []float64) float64 {
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	if s2 == 0 {
		return math.NaN()
	}
	return s * s / (float64(len(x)) * s2)
}

// windows turns the receiver's 1 ms bins into per-sender bytes in
// incastWindow windows from t0 (a bin goes to the window holding its
// middle), nwin windows.
func windows(nb testbed.Bins, t0 time.Time, addrs []netip.Addr, nwin int) [][]float64 {
	out := make([][]float64, len(addrs))
	for i, a := range addrs {
		out[i] = make([]float64, nwin)
		for j, c := range nb.By[a.String()] {
			if c == 0 {
				continue
			}
			mid := nb.EpochNS + int64(j)*nb.BinNS + nb.BinNS/2 - t0.UnixNano()
			if mid < 0 {
				continue
			}
			if w := int(mid / int64(incastWindow)); w < nwin {
				out[i][w] += float64(c)
			}
		}
	}
	return out
}

// fairness returns Jain's index per window over the senders that were
// still sending through the whole window (fct beyond its end), for the
// windows with at least two of them and some bytes.
func fairness(bytes [][]float64, fcts []time.Duration) []float64 {
	var out []float64
	if len(bytes) == 0 {
		return nil
	}
	for w := range bytes[0] {
		end := time.Duration(w+1) * incastWindow
		var x []float64
		for i := range bytes {
			if fcts[i] >= end {
				x = append(x, bytes[i][w])
			}
		}
		if len(x) < 2 {
			continue
		}
		if j := jain(x); !math.IsNaN(j) {
			out = append(out, j)
		}
	}
	return out
}

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
				x, err = newGRPCSender(ns, sink.TcpAddr(), nil, nc.size, nc.chunk)
			} else {
				x, err = newErpcSender(ns, star.ClientAddrs[i], sink.UdpAddr(), nc, opts)
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

// incastTrace is a row's last incast, per sender, for the plot (and the
// JSON rows' "trace" when -plot is given).
type incastTrace struct {
	WindowMS int         `json:"window_ms"`
	Mbps     [][]float64 `json:"mbps"` // [sender][window]
	FairMbps float64     `json:"fair_mbps"`
}

func incastRecord(b *scenario.Bench, s *incastSystem, n int, ideal time.Duration) report.Record {
	nc := b.Cfg.Ext.(*netConfig)
	a := &s.acc
	us := func(ns float64) float64 { return report.Round3(ns / 1e3) }
	ops := int64(a.calls - a.failed)
	j := report.Record{
		Scenario: "incast", System: s.name, Transport: s.tr,
		Size: nc.size, RespSize: 32, Concurrency: nc.size / nc.chunk, Sessions: n,
		DurationS: report.Round3(a.secs), Ops: ops, Errors: int64(a.failed),
		P50: us(a.fct.Quantile(0.5)), P90: us(a.fct.Quantile(0.9)), P99: us(a.fct.Quantile(0.99)),
		P999: us(a.fct.Quantile(0.999)), AllocsPerOp: -1, Cores: b.Out.Cores,
		MeanUs: us(a.fct.Mean()), MaxUs: us(float64(a.fct.Max)),
	}
	if a.secs > 0 {
		j.QPS = report.Round3(float64(ops) / a.secs)
		j.Gbps = report.Round3(float64(ops) * float64(nc.chunk+32) * 8 / a.secs / 1e9)
	}
	if a.firstErr != nil {
		j.Error = a.firstErr.Error()
	}
	p99 := a.fct.Quantile(0.99)
	j.Extra = map[string]any{
		"senders":         n,
		"utilization":     report.Round3(utilization(a.qbytes, nc.rate, a.secs)),
		"utilization_min": report.Round3(a.utilMin),
		"jain":            report.Round3(meter.Mean(a.jains)),
		"jain_min":        report.Round3(a.jainMin),
		"fct_p99_ideal":   report.Round3(p99 / float64(ideal)),
		"fct_max_ideal":   report.Round3(float64(a.fct.Max) / float64(ideal)),
		"ideal_us":        us(float64(ideal)),
		"failed":          a.failed,
		"retransmits":     a.rexmit,
		"drops":           a.drops,
		"max_queue_bytes": a.maxQueue,
		"rate_mbit":       report.Round3(float64(nc.rate) / 1e6),
		"queue_limit":     nc.limit,
		"bottleneck":      map[bool]string{false: "tbf", true: "htb"}[nc.htb],
		"incasts":         a.n,
	}
	if b.Cfg.Plot != "" && a.last != nil {
		j.Extra["trace"] = &incastTrace{WindowMS: int(incastWindow / time.Millisecond), Mbps: a.last.trace,
			FairMbps: report.Round3(float64(nc.rate) / 1e6 / float64(n))}
	}
	return j
}

// incastTable prints the rows, one per (senders, system), and the notes.
type incastTable struct {
	b         *scenario.Bench
	nc        *netConfig
	headerOut bool
	rows      []report.Record
}

var incastCols = []string{"Gb/s", "util", "Jain", "FCT p50", "p99", "max", "ideal", "p99/ideal", "rexmit", "drops", "failed", "maxQ"}

func (t *incastTable) Add(j report.Record) {
	o := t.b.Out
	o.Done++
	o.Results = append(o.Results, j)
	t.rows = append(t.rows, j)
	if o.Cfg.Json {
		bs, _ := json.Marshal(j)
		fmt.Fprintf(o.W, "%s\n", bs)
		return
	}
	o.ClearBar()
	if !t.headerOut {
		t.headerOut = true
		nc := t.nc
		kind := "TBF"
		if nc.htb {
			kind = "HTB+bfifo"
		}
		fmt.Fprintf(o.W, "# incast: N senders x %s each (calls of %s) at once to one server through a %s bottleneck of %.0f Mbit/s, burst %s, queue %s; %d incasts per row after %d discarded; cores %s\n",
			report.HumanSize(nc.size), report.HumanSize(nc.chunk), kind, float64(nc.rate)/1e6, report.HumanSize(nc.burst), report.HumanSize(nc.limit), nc.reps, nc.warm, o.Cores)
		var h, sep strings.Builder
		h.WriteString("| senders |     size | system     |")
		sep.WriteString("|---------|----------|------------|")
		report.HeaderCells(&h, &sep, incastCols, report.ColW)
		fmt.Fprintln(o.W, h.String())
		fmt.Fprintln(o.W, sep.String())
	}
	e := j.Extra
	cells := []string{
		fmt.Sprintf("%.3f", j.Gbps),
		fmt.Sprintf("%.3f", e["utilization"]),
		fmt.Sprintf("%.3f", e["jain"]),
		report.HumanUs(j.P50), report.HumanUs(j.P99), report.HumanUs(j.MaxUs), report.HumanUs(e["ideal_us"].(float64)),
		fmt.Sprintf("%.2f", e["fct_p99_ideal"]),
		fmt.Sprint(e["retransmits"]), fmt.Sprint(e["drops"]), fmt.Sprint(e["failed"]),
		report.HumanSize(int(e["max_queue_bytes"].(uint32))),
	}
	var r strings.Builder
	fmt.Fprintf(&r, "| %7d | %8s | %-10s |", e["senders"], report.HumanSize(j.Size), j.System)
	for _, c := range cells {
		fmt.Fprintf(&r, " %*s |", report.ColW, c)
	}
	fmt.Fprintln(o.W, r.String())
	if j.Error != "" {
		fmt.Fprintf(o.W, "#   %s, %v senders: %d calls failed; first: %s\n", j.System, e["senders"], j.Errors, j.Error)
	}
}

// Finish prints each row's targets (issue 15) after the table.
func (t *incastTable) Finish() {
	o := t.b.Out
	if o.Cfg.Json || len(t.rows) == 0 {
		return
	}
	fmt.Fprintln(o.W, "# targets for erpc: utilisation >= 0.90, Jain >= 0.95, p99 FCT <= 1.5 x ideal, no failed call")
	sort.SliceStable(t.rows, func(a, c int) bool { return t.rows[a].Sessions < t.rows[c].Sessions })
	for _, j := range t.rows {
		e := j.Extra
		ok := func(b bool) string { return map[bool]string{true: "met", false: "MISSED"}[b] }
		fmt.Fprintf(o.W, "#   %-10s %3v senders: utilisation %.3f (worst incast %.3f) %s, Jain %.3f (worst incast %.3f) %s, p99 FCT %.2fx ideal %s, %v failed\n",
			j.System, e["senders"], e["utilization"], e["utilization_min"], ok(e["utilization"].(float64) >= 0.9),
			e["jain"], e["jain_min"], ok(e["jain"].(float64) >= 0.95), e["fct_p99_ideal"], ok(e["fct_p99_ideal"].(float64) <= 1.5), e["failed"])
	}
}
