package scenario

import (
	"errors"
	"fmt"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// Bench runs one scenario.
type Bench struct {
	Cfg    *Config
	Out    *report.Output
	SrvCPU int
	failed []error
	base1  map[string]float64 // sessions: requests/s with one session, per point
}

// Pin puts the client on CPU 1 and its servers on CPU 0 when the machine
// has two or more CPUs and -pin is set.
func (b *Bench) Pin() {
	b.SrvCPU = -1
	b.Out.Cores = "unpinned"
	if !b.Cfg.Pin || proc.NumCPU() < 2 {
		return
	}
	if err := proc.PinProcess(1); err != nil {
		b.Out.Warn("pinning the client to CPU 1: %v", err)
		return
	}
	b.SrvCPU = 0
	b.Out.Cores = "server=0 client=1"
	if b.Cfg.Transport == "memnet" {
		b.Out.Cores = "server=0 client=1 (erpc memnet: one process, client's CPU)"
	}
}

// Points lists the scenario's size x concurrency grid.
func (b *Bench) Points(sessions int, loss float64) []meter.Point {
	var ps []meter.Point
	for _, size := range b.Cfg.Sizes {
		for _, c := range b.Cfg.Conc {
			resp := size
			if b.Cfg.Resp > 0 {
				resp = b.Cfg.Resp
			}
			ps = append(ps, meter.Point{Size: size, Resp: resp, Conc: c, Sessions: sessions, Loss: loss,
				Warmup: b.Cfg.Warmup, Dur: b.Cfg.Dur})
		}
	}
	return ps
}

// start brings up system's server and a client connected to it.
func (b *Bench) start(system string, loss float64) (*systems.Peer, error) {
	cfg := b.Cfg
	return systems.Start(system, systems.Config{Transport: cfg.Transport, Busy: cfg.Busy, Window: cfg.Window,
		RawDgram: cfg.RawDgram, RawWindow: cfg.rawWindow, Loss: loss, CPU: b.SrvCPU})
}

// RunGrid measures every point on every system, systems in turn for each
// point (starting with a different one each time), so that drift over the
// run affects all alike. extra, if set, annotates each result.
func (b *Bench) RunGrid(loss float64, extra func(*meter.Result)) error {
	var peers []*systems.Peer
	for _, s := range b.Cfg.Systems {
		p, err := b.start(s, loss)
		if err != nil {
			b.Fail(s, err)
			continue
		}
		defer p.Stop()
		peers = append(peers, p)
	}
	pts := b.Points(max(b.Cfg.rateSessions, 1), loss)
	b.Out.Expect(len(pts) * len(peers))
	for k, pt := range pts {
		for _, r := range b.measureRounds(peers, k, pt) {
			if extra != nil {
				extra(&r)
			}
			b.Out.Add(r)
		}
	}
	return b.Err()
}

// measureRounds measures pt on every peer, starting with peer k: in one go
// each, or with -rounds in that many rounds of d/rounds each, the peers
// alternating round by round, each round after a warm-up of its own
// (warmup/rounds, at least roundWarmup: long enough for a server parked
// since its last round to be spinning again); each round starts one peer
// later. It returns one merged result per peer, in the first round's
// order.
func (b *Bench) measureRounds(peers []*systems.Peer, k int, pt meter.Point) []meter.Result {
	rounds := max(b.Cfg.rounds, 1)
	sub := pt
	if rounds > 1 {
		sub.Dur = pt.Dur / time.Duration(rounds)
		sub.Warmup = max(pt.Warmup/time.Duration(rounds), roundWarmup)
	}
	byPeer := make([]meter.Result, len(peers))
	for r := range rounds {
		// Each round starts with the next peer, so that none is always
		// the one measured first after the others' rounds.
		for j := range peers {
			i := (j + k + r) % len(peers)
			res := b.Measure(peers[i], sub)
			if r == 0 {
				byPeer[i] = res
			} else {
				byPeer[i].Absorb(res)
			}
		}
	}
	out := make([]meter.Result, 0, len(peers))
	for j := range peers {
		out = append(out, byPeer[(j+k)%len(peers)])
	}
	return out
}

// roundWarmup is the shortest warm-up of a round (see measureRounds).
const roundWarmup = 50 * time.Millisecond

// Measure measures pt on p, with the progress bar and a watchdog.
func (b *Bench) Measure(p *systems.Peer, pt meter.Point) meter.Result {
	b.Out.ProgressStart(p.System, pt)
	defer meter.Watchdog(fmt.Sprintf("%s %s c=%d", p.System, report.HumanSize(pt.Size), pt.Conc), pt.Warmup+pt.Dur+60*time.Second)()
	if p.System == "memcpy" {
		// One stream of copies whatever -c says (the row keeps its c),
		// briefly: a reference, not a contestant.
		pt.Resp, pt.Dur = 0, min(pt.Dur, 500*time.Millisecond)
	}
	r := meter.Measure(p.Cli, pt)
	r.System = p.System
	r.Tr = systems.TransportOf(p.System, b.Cfg.Transport)
	if r.Tr == "xdp" {
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		r.Extra["xdp_mode"] = systems.XDPMode(p)
	}
	switch p.System {
	case "raw-shm":
		r.Inlight = systems.ShmInflight(pt)
	}
	return r
}

// Fail records that a system could not run at all.
func (b *Bench) Fail(system string, err error) {
	b.failed = append(b.failed, fmt.Errorf("%s: %w", system, err))
	b.Out.Warn("%s: %v", system, err)
}

// Err joins the failures of systems that could not run.
func (b *Bench) Err() error {
	if len(b.failed) > 0 {
		return errors.Join(b.failed...)
	}
	return nil
}

// RunLoss measures erpc under each loss rate, with loss injected on both
// endpoints, and relates throughput to the lossless run of the same point.
func (b *Bench) RunLoss() error {
	losses := []float64{0}
	for _, l := range b.Cfg.Loss {
		if l != 0 {
			losses = append(losses, l)
		}
	}
	base := map[string]float64{}
	for _, l := range losses {
		err := b.RunGrid(l, func(r *meter.Result) {
			key := fmt.Sprintf("%s/%d/%d", r.System, r.P.Size, r.P.Conc)
			qps := float64(r.Ops) / r.Secs
			if r.Secs <= 0 {
				qps = 0
			}
			if l == 0 {
				base[key] = qps
			}
			// The point's own figures (erpc's retransmits and nacks)
			// stay beside the loss.
			if r.Extra == nil {
				r.Extra = map[string]any{}
			}
			r.Extra["loss"] = l
			if q := base[key]; q > 0 {
				r.Extra["rel_lossless"] = qps / q
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// RunSessions measures, for each number of sessions, a fresh server's
// memory before and after the client opens them (idle), then round-robin
// calls over all of them; then, per system, the server's resident set
// before, during and 10 s after a 64 KiB load (memory.go).
func (b *Bench) RunSessions() error {
	total := len(b.Cfg.Sessions) * len(b.Cfg.Systems) * len(b.Points(1, 0))
	b.Out.Expect(total + len(b.Cfg.Systems))
	for _, n := range b.Cfg.Sessions {
		for _, s := range b.Cfg.Systems {
			if err := b.sessionsOne(s, n); err != nil {
				b.Fail(s, err)
			}
		}
	}
	for _, s := range b.Cfg.Systems {
		if err := b.memoryAfterLoad(s); err != nil {
			b.Fail(s, err)
		}
	}
	return b.Err()
}

func (b *Bench) sessionsOne(system string, n int) error {
	p, err := b.start(system, 0)
	if err != nil {
		return err
	}
	defer p.Stop()
	ec := p.Cli.(*systems.ErpcClient)
	time.Sleep(100 * time.Millisecond)
	rss0, heap0, err := p.Srv.Memory()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	t0 := time.Now()
	stop := meter.Watchdog(fmt.Sprintf("opening %d sessions", n), 120*time.Second)
	err = ec.EnsureSessions(n)
	stop()
	if err != nil {
		return err
	}
	dialSecs := time.Since(t0).Seconds()
	time.Sleep(100 * time.Millisecond)
	rss1, heap1, err := p.Srv.Memory()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	// The first session existed before the baseline.
	opened := float64(max(n-1, 1))
	if b.base1 == nil {
		b.base1 = map[string]float64{}
	}
	for _, pt := range b.Points(n, 0) {
		r := b.Measure(p, pt)
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		r.Extra["mem_per_session_bytes"] = float64(heap1-heap0) / opened
		r.Extra["rss_per_session_bytes"] = float64(rss1-rss0) / opened
		r.Extra["dial_s"] = dialSecs
		key := fmt.Sprintf("%s/%d/%d", system, pt.Size, pt.Conc)
		if r.Secs > 0 {
			qps := float64(r.Ops) / r.Secs
			if n == 1 {
				b.base1[key] = qps
			}
			if q := b.base1[key]; q > 0 {
				r.Extra["rel_1session"] = qps / q
			}
		}
		if n == 1 {
			r.Extra["mem_per_session_bytes"] = 0.0
			r.Extra["rss_per_session_bytes"] = 0.0
		}
		b.Out.Add(r)
	}
	return nil
}
