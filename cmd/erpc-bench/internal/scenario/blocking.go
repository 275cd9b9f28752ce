package scenario

import (
	"fmt"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// BlockingInflight is how many calls to the blocking handler latency
// -blocking keeps in flight.
const BlockingInflight = 10

// RunBlocking is "latency -blocking": each point on each erpc system,
// measured unloaded, then while another session of another endpoint
// keeps BlockingInflight calls in flight to the server's Block handler
// (it sleeps systems.BlockFor, registered with a plain Server.Handle); in
// -rounds rounds, the loaded measurement first in every other round.
// Each point gives two rows per system, blocking_inflight 0 and
// BlockingInflight; the loaded one carries p50_rel_unloaded, its echo p50
// over the unloaded one's, and both blocking_calls_per_s, the Block calls
// answered per second (0 unloaded), which shows whether the blocked calls
// ran one at a time; the loaded one blocking_call_mean_ms, their mean
// latency. -window defaults to 2 x BlockingInflight here (ParseGridFlags):
// a session's window is the smaller of its ends', and the server's
// default, 8, would hold two of the load's calls back.
func (b *Bench) RunBlocking() error {
	var peers []*systems.Peer
	for _, s := range b.Cfg.Systems {
		p, err := b.start(s, 0)
		if err != nil {
			b.Fail(s, err)
			continue
		}
		defer p.Stop()
		peers = append(peers, p)
	}
	if !b.Cfg.JSON {
		fmt.Fprintf(b.Out.W, "# latency -blocking: each point unloaded, then (second row) while another session keeps %d calls in flight to a handler blocking %v\n",
			BlockingInflight, systems.BlockFor)
	}
	pts := b.Points(1, 0)
	b.Out.Expect(2 * len(pts) * len(peers))
	var notes []string
	for _, pt := range pts {
		for _, p := range peers {
			idle, loaded, err := b.blockingPoint(p, pt)
			if err != nil {
				b.Fail(p.System, err)
				continue
			}
			b.Out.Add(idle)
			b.Out.Add(loaded)
			rel := loaded.H.Quantile(0.5) / idle.H.Quantile(0.5)
			notes = append(notes, fmt.Sprintf("#   %s %s: echo p50 %s unloaded, %s under the blocking load = %.2fx (target <= 1.2x); Block calls answered %.1f/s, mean %.1f ms",
				p.System, report.HumanSize(pt.Size), report.HumanUs(idle.H.Quantile(0.5)/1e3), report.HumanUs(loaded.H.Quantile(0.5)/1e3),
				rel, loaded.Extra["blocking_calls_per_s"], loaded.Extra["blocking_call_mean_ms"]))
		}
	}
	b.Out.Finish()
	if !b.Cfg.JSON {
		for _, n := range notes {
			fmt.Fprintln(b.Out.W, n)
		}
	}
	return b.Err()
}

// blockingPoint measures pt on p unloaded and loaded, in rounds.
func (b *Bench) blockingPoint(p *systems.Peer, pt meter.Point) (idle, loaded meter.Result, err error) {
	rounds := max(b.Cfg.rounds, 1)
	sub := pt
	sub.Dur = pt.Dur / time.Duration(rounds)
	if rounds > 1 {
		sub.Warmup = max(pt.Warmup/time.Duration(rounds), roundWarmup)
	}
	var perSec, meanMs float64
	for r := range rounds {
		for k := range 2 {
			withLoad := (k+r)%2 == 1
			if !withLoad {
				absorb(&idle, b.Measure(p, sub), r == 0 && k == 0)
				continue
			}
			load, err := systems.StartBlockingLoad(p.Srv.Addr, systems.TransportOf(p.System, b.Cfg.Transport), BlockingInflight)
			if err != nil {
				return idle, loaded, err
			}
			res := b.Measure(p, sub)
			rate, mean, errs, first := load.Stop()
			if errs > 0 {
				return idle, loaded, fmt.Errorf("%d blocking calls failed: %w", errs, first)
			}
			perSec += rate / float64(rounds)
			meanMs += float64(mean) / 1e6 / float64(rounds)
			absorb(&loaded, res, r == 0 && k == 0)
		}
	}
	idle.Extra = withBlocking(idle.Extra, 0, 0)
	loaded.Extra = withBlocking(loaded.Extra, BlockingInflight, perSec)
	loaded.Extra["blocking_call_mean_ms"] = report.Round3(meanMs)
	if q := idle.H.Quantile(0.5); q > 0 {
		loaded.Extra["p50_rel_unloaded"] = report.Round3(loaded.H.Quantile(0.5) / q)
	}
	return idle, loaded, nil
}

// absorb sets acc to r the first time, and adds r to it afterwards.
func absorb(acc *meter.Result, r meter.Result, first bool) {
	if first || acc.System == "" {
		*acc = r
		return
	}
	acc.Absorb(r)
}

func withBlocking(extra map[string]any, inflight int, perSec float64) map[string]any {
	if extra == nil {
		extra = map[string]any{}
	}
	extra["blocking_inflight"] = inflight
	extra["blocking_handler_ms"] = systems.BlockFor.Milliseconds()
	extra["blocking_calls_per_s"] = report.Round3(perSec)
	return extra
}
