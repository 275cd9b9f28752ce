package stream

import (
	"fmt"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
)

// peer is one system's server process and client.
type peer struct {
	system string
	srv    *proc.Server
	cli    client
}

func (p *peer) stop() {
	if p.cli != nil {
		p.cli.Close()
	}
	p.srv.Stop()
}

func startPeer(b *scenario.Bench, system string) (*peer, error) {
	defer meter.Watchdog("starting stream-"+system, 60*time.Second)()
	srv, err := proc.Start(proc.Config{System: "stream-" + system, Transport: "udp", CPU: b.SrvCPU})
	if err != nil {
		return nil, err
	}
	p := &peer{system: system, srv: srv}
	if system == "grpc" {
		p.cli, err = newGRPCClient(srv.Addr)
	} else {
		p.cli, err = newErpcClient(srv.Addr)
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("%s client: %w", system, err)
	}
	return p, nil
}

// row is one line of the scenario per system.
type row struct {
	size, streams int
	slow          bool // the slow-consumer row: streams is then 1, beside the slow one
}

// Run measures every row on every system, the systems alternating in
// rounds, and reports each row per system, its rounds merged.
func Run(b *scenario.Bench) error {
	sc := b.Cfg.Ext.(*streamConfig)
	var peers []*peer
	for _, s := range b.Cfg.Systems {
		p, err := startPeer(b, s)
		if err != nil {
			b.Fail(s, err)
			continue
		}
		defer p.stop()
		peers = append(peers, p)
	}
	var rows []row
	for _, size := range b.Cfg.Sizes {
		for _, n := range sc.streams {
			rows = append(rows, row{size: size, streams: n})
		}
		if sc.slow {
			rows = append(rows, row{size: size, streams: 1, slow: true})
		}
	}
	if !b.Cfg.JSON {
		fmt.Fprintf(b.Out.W, "# stream: msgs/s and Gb/s of N server streams on one session (gRPC: connection), read flat out; "+
			"P50-P99: round trip of one message on each of N bidi streams (ping-pong); %d round(s)\n", sc.rounds)
	}
	b.Out.Expect(len(rows) * len(peers))
	var notes []string
	for _, rw := range rows {
		for i, r := range measureRow(peers, rw, sc.rounds, b.Cfg.Warmup, b.Cfg.Dur) {
			rate := 0.0
			if r.Secs > 0 {
				rate = float64(r.Ops) / r.Secs
			}
			r.Extra["msgs_per_s"] = report.Round3(rate)
			if solo, ok := r.Extra["solo_msgs_per_s"].(float64); ok && rw.slow && solo > 0 {
				rel := rate / solo
				r.Extra["rel_solo"] = report.Round3(rel)
				notes = append(notes, fmt.Sprintf("#   slow consumer, %s: %s's other stream %s msg/s = %.3fx its solo rate (%s msg/s, same rounds)",
					report.HumanSize(rw.size), peers[i].system, report.HumanCount(rate), rel, report.HumanCount(solo)))
			}
			if rw.slow && !b.Cfg.JSON {
				b.Out.Done++ // a note below the table, not a row of it
				continue
			}
			b.Out.Add(r)
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

// measureRow measures rw on every peer in rounds, each round starting
// with the next peer, and returns one merged result per peer.
func measureRow(peers []*peer, rw row, rounds int, warmup, dur time.Duration) []meter.Result {
	out := make([]meter.Result, len(peers))
	sub := dur / time.Duration(rounds)
	for i, p := range peers {
		out[i] = meter.Result{P: meter.Point{Size: rw.size, Conc: rw.streams, Sessions: 1, Warmup: warmup, Dur: dur},
			System: p.system, Tr: "udp", Allocs: -1,
			Extra: map[string]any{"streams": rw.streams, "kind": "rate"}}
		if p.system == "grpc" {
			out[i].Tr = "tcp"
		}
		if rw.slow {
			out[i].Extra["kind"] = "slow-consumer"
			out[i].Extra["slow_streams"] = 1
		}
	}
	soloMsgs, soloSecs := make([]int64, len(peers)), make([]float64, len(peers))
	for r := range rounds {
		for j := range peers {
			i := (j + r) % len(peers)
			if !rw.slow {
				measureOnce(peers[i].cli, rw, warmup, sub, &out[i])
				continue
			}
			// The reference, one stream alone, in the same round: before
			// the slow-consumer measurement in even rounds, after in odd.
			for k := range 2 {
				if (k+r)%2 == 0 {
					msgs, secs, err := measureRate(peers[i].cli, rw.size, 1, false, warmup, sub)
					soloMsgs[i], soloSecs[i] = soloMsgs[i]+msgs, soloSecs[i]+secs
					addErr(&out[i], err)
				} else {
					measureOnce(peers[i].cli, rw, warmup, sub, &out[i])
				}
			}
		}
	}
	for i := range out {
		if rw.slow && soloSecs[i] > 0 {
			out[i].Extra["solo_msgs_per_s"] = report.Round3(float64(soloMsgs[i]) / soloSecs[i])
		}
	}
	return out
}

// addErr counts err, if any, in res and keeps the first.
func addErr(res *meter.Result, err error) {
	if err == nil {
		return
	}
	res.Errs++
	if res.FirstErr == nil {
		res.FirstErr = err
	}
}

// measureOnce adds one round of rw on c to res: the rate, then (except
// for the slow-consumer row) the ping-pong for half as long.
func measureOnce(c client, rw row, warmup, dur time.Duration, res *meter.Result) {
	msgs, secs, err := measureRate(c, rw.size, rw.streams, rw.slow, warmup, dur)
	res.Ops += msgs
	res.Secs += secs
	addErr(res, err)
	if rw.slow {
		return
	}
	h, err := measurePing(c, rw.size, rw.streams, warmup/2, dur/2)
	res.H.Merge(&h)
	res.Extra["pingpong_round_trips"] = int64(res.H.N)
	addErr(res, err)
}
