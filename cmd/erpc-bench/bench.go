package main

import (
	"errors"
	"fmt"
	"time"
)

// bench runs one scenario.
type bench struct {
	cfg    *config
	out    *output
	srvCPU int
	failed []error
	base1  map[string]float64 // sessions: requests/s with one session, per point
}

// pin puts the client on CPU 1 and its servers on CPU 0 when the machine
// has two or more CPUs and -pin is set.
func (b *bench) pin() {
	b.srvCPU = -1
	b.out.cores = "unpinned"
	if !b.cfg.pin || numCPU() < 2 {
		return
	}
	if err := pinProcess(1); err != nil {
		b.out.warn("pinning the client to CPU 1: %v", err)
		return
	}
	b.srvCPU = 0
	b.out.cores = "server=0 client=1"
	if b.cfg.transport == "memnet" {
		b.out.cores = "server=0 client=1 (erpc memnet: one process, client's CPU)"
	}
}

// points lists the scenario's size x concurrency grid.
func (b *bench) points(sessions int, loss float64) []point {
	var ps []point
	for _, size := range b.cfg.sizes {
		for _, c := range b.cfg.conc {
			resp := size
			if b.cfg.resp > 0 {
				resp = b.cfg.resp
			}
			ps = append(ps, point{size: size, resp: resp, conc: c, sessions: sessions, loss: loss,
				warmup: b.cfg.warmup, dur: b.cfg.dur})
		}
	}
	return ps
}

// start brings up system's server and a client connected to it.
func (b *bench) start(system string, loss float64) (*peer, error) {
	cfg := b.cfg
	return startPeer(system, peerConfig{transport: cfg.transport, busy: cfg.busy, window: cfg.window,
		rawDgram: cfg.rawDgram, rawWindow: cfg.rawWindow, loss: loss, cpu: b.srvCPU})
}

// runGrid measures every point on every system, systems in turn for each
// point (starting with a different one each time), so that drift over the
// run affects all alike. extra, if set, annotates each result.
func (b *bench) runGrid(loss float64, extra func(*result)) error {
	var peers []*peer
	for _, s := range b.cfg.systems {
		p, err := b.start(s, loss)
		if err != nil {
			b.fail(s, err)
			continue
		}
		defer p.stop()
		peers = append(peers, p)
	}
	pts := b.points(max(b.cfg.rateSessions, 1), loss)
	b.out.expect(len(pts) * len(peers))
	for k, pt := range pts {
		for _, r := range b.measureRounds(peers, k, pt) {
			if extra != nil {
				extra(&r)
			}
			b.out.add(r)
		}
	}
	return b.err()
}

// measureRounds measures pt on every peer, starting with peer k: in one go
// each, or with -rounds in that many rounds of d/rounds each, the peers
// alternating round by round, each round after a warm-up of its own
// (warmup/rounds, at least roundWarmup: long enough for a server parked
// since its last round to be spinning again); each round starts one peer
// later. It returns one merged result per peer, in the first round's
// order.
func (b *bench) measureRounds(peers []*peer, k int, pt point) []result {
	rounds := max(b.cfg.rounds, 1)
	sub := pt
	if rounds > 1 {
		sub.dur = pt.dur / time.Duration(rounds)
		sub.warmup = max(pt.warmup/time.Duration(rounds), roundWarmup)
	}
	byPeer := make([]result, len(peers))
	for r := range rounds {
		// Each round starts with the next peer, so that none is always
		// the one measured first after the others' rounds.
		for j := range peers {
			i := (j + k + r) % len(peers)
			res := b.measure(peers[i], sub)
			if r == 0 {
				byPeer[i] = res
			} else {
				byPeer[i].absorb(res)
			}
		}
	}
	out := make([]result, 0, len(peers))
	for j := range peers {
		out = append(out, byPeer[(j+k)%len(peers)])
	}
	return out
}

// roundWarmup is the shortest warm-up of a round (see measureRounds).
const roundWarmup = 50 * time.Millisecond

func (b *bench) measure(p *peer, pt point) result {
	b.out.progressStart(p.system, pt)
	defer watchdog(fmt.Sprintf("%s %s c=%d", p.system, humanSize(pt.size), pt.conc), pt.warmup+pt.dur+60*time.Second)()
	if p.system == "memcpy" {
		// One stream of copies whatever -c says (the row keeps its c),
		// briefly: a reference, not a contestant.
		pt.resp, pt.dur = 0, min(pt.dur, 500*time.Millisecond)
	}
	r := measure(p.cli, pt)
	r.system = p.system
	r.tr = transportOf(p.system, b.cfg.transport)
	switch p.system {
	case "raw-shm":
		r.inlight = shmInflight(pt)
	}
	return r
}

// fail records that a system could not run at all.
func (b *bench) fail(system string, err error) {
	b.failed = append(b.failed, fmt.Errorf("%s: %w", system, err))
	b.out.warn("%s: %v", system, err)
}

func (b *bench) err() error {
	if len(b.failed) > 0 {
		return errors.Join(b.failed...)
	}
	return nil
}

// runLoss measures erpc under each loss rate, with loss injected on both
// endpoints, and relates throughput to the lossless run of the same point.
func (b *bench) runLoss() error {
	losses := []float64{0}
	for _, l := range b.cfg.loss {
		if l != 0 {
			losses = append(losses, l)
		}
	}
	base := map[string]float64{}
	for _, l := range losses {
		err := b.runGrid(l, func(r *result) {
			key := fmt.Sprintf("%s/%d/%d", r.system, r.p.size, r.p.conc)
			qps := float64(r.ops) / r.secs
			if r.secs <= 0 {
				qps = 0
			}
			if l == 0 {
				base[key] = qps
			}
			r.extra = map[string]any{"loss": l}
			if q := base[key]; q > 0 {
				r.extra["rel_lossless"] = qps / q
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// runSessions measures, for each number of sessions, a fresh server's
// memory before and after the client opens them (idle), then round-robin
// calls over all of them.
func (b *bench) runSessions() error {
	total := len(b.cfg.sessions) * len(b.cfg.systems) * len(b.points(1, 0))
	b.out.expect(total)
	for _, n := range b.cfg.sessions {
		for _, s := range b.cfg.systems {
			if err := b.sessionsOne(s, n); err != nil {
				b.fail(s, err)
			}
		}
	}
	return b.err()
}

func (b *bench) sessionsOne(system string, n int) error {
	p, err := b.start(system, 0)
	if err != nil {
		return err
	}
	defer p.stop()
	ec := p.cli.(*erpcClient)
	time.Sleep(100 * time.Millisecond)
	rss0, heap0, err := p.srv.memory()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	t0 := time.Now()
	stop := watchdog(fmt.Sprintf("opening %d sessions", n), 120*time.Second)
	err = ec.ensureSessions(n)
	stop()
	if err != nil {
		return err
	}
	dialSecs := time.Since(t0).Seconds()
	time.Sleep(100 * time.Millisecond)
	rss1, heap1, err := p.srv.memory()
	if err != nil {
		return fmt.Errorf("server memory: %w", err)
	}
	// The first session existed before the baseline.
	opened := float64(max(n-1, 1))
	if b.base1 == nil {
		b.base1 = map[string]float64{}
	}
	for _, pt := range b.points(n, 0) {
		r := b.measure(p, pt)
		if r.extra == nil {
			r.extra = map[string]any{}
		}
		r.extra["mem_per_session_bytes"] = float64(heap1-heap0) / opened
		r.extra["rss_per_session_bytes"] = float64(rss1-rss0) / opened
		r.extra["dial_s"] = dialSecs
		key := fmt.Sprintf("%s/%d/%d", system, pt.size, pt.conc)
		if r.secs > 0 {
			qps := float64(r.ops) / r.secs
			if n == 1 {
				b.base1[key] = qps
			}
			if q := b.base1[key]; q > 0 {
				r.extra["rel_1session"] = qps / q
			}
		}
		if n == 1 {
			r.extra["mem_per_session_bytes"] = 0.0
			r.extra["rss_per_session_bytes"] = 0.0
		}
		b.out.add(r)
	}
	return nil
}
