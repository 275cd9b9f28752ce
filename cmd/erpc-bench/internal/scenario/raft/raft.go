package raft

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/contrib/raft/kvstore"
	"github.com/erpc-go/erpc/contrib/raft/rawkv"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/report"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// The raft scenario: the latency of a replicated PUT (16-byte key, 64-byte
// value), one client issuing them one at a time, as in eRPC's Raft
// experiment. The cluster is 3 replicas of contrib/raft's kvstore, all in
// one server process (each replica with its own erpc endpoint and raft
// instance, in-memory log and snapshot stores, so no disk); the client is
// this process, on another core. A PUT is answered once the entry is
// committed by a majority and applied on the leader.
//
// System "erpc" runs raft over contrib/raft's erpc transport; "raft-tcp"
// runs the identical cluster over hashicorp/raft's NetworkTransport on TCP
// loopback. In both, the client reaches the leader over erpc on UDP
// loopback, so only raft's transport differs. "etcd-rawnode" is eRPC's
// own shape (rawnode.go): contrib/raft/rawkv, etcd's raft RawNode
// driven from each replica's erpc event loop, no raft goroutines; its
// client speaks rawkv's protocol, also over erpc on UDP loopback.
//
// Besides the client-side latency, each system reports two figures that
// split it: the bare erpc round trip from the client to the leader's
// endpoint (base_rtt_p50_us), and the latency of a PUT issued on the
// leader itself, without the client hop (leader_apply_p50_us): raft.Apply
// for hashicorp/raft, which is raft's own commit path, its goroutine
// hand-offs plus one replication round trip to the fastest follower;
// Replica.Propose for etcd-rawnode, a Post to the leader's loop and a
// channel back around the same round trip.

const (
	raftKeySize   = 16
	raftValueSize = 64
	raftRespSize  = 3 // status, found, empty value
	raftKeys      = 1000
)

// Run measures every system in alternating rounds and reports each
// once, its rounds merged.
func Run(b *scenario.Bench) error {
	rc := *b.Cfg.Ext.(*raftConfig)
	if !b.Cfg.JSON {
		fmt.Fprintf(b.Out.W, "# raft: 3 replicas (kvstore, or rawkv for %s; in-memory stores) in one server process, client in this process; "+
			"PUT of a %d B key and %d B value, one at a time; erpc endpoints spin %v (raft-tcp replicas 0); %d round(s) per system\n",
			SysRawNode,
			raftKeySize, raftValueSize, systems.SpinString(rc.spin), rc.rounds)
	}
	var peers []*raftPeer
	for _, s := range b.Cfg.Systems {
		p, err := startRaft(b, s)
		if err != nil {
			b.Fail(s, err)
			continue
		}
		defer p.Stop()
		peers = append(peers, p)
	}
	b.Out.Expect(len(peers) * rc.rounds)
	dur := b.Cfg.Dur / time.Duration(rc.rounds)
	pt := meter.Point{Size: raftKeySize + raftValueSize, Resp: raftRespSize, Conc: 1, Sessions: 1,
		Warmup: b.Cfg.Warmup, Dur: dur}
	merged := make([]*meter.Result, len(peers))
	for round := range rc.rounds {
		for j := range peers {
			k := j
			if round%2 == 1 {
				k = len(peers) - 1 - j
			}
			r := b.Measure(&peers[k].Peer, pt)
			if merged[k] == nil {
				merged[k] = &r
			} else {
				mergeResult(merged[k], &r)
			}
		}
	}
	var notes []string
	for k, p := range peers {
		r := merged[k]
		r.Extra = map[string]any{"replicas": 3, "rounds": rc.rounds, "cluster": "one process",
			"spin": systems.SpinString(rc.spin)}
		if p.rtt > 0 {
			r.Extra["base_rtt_p50_us"] = report.Round3(float64(p.rtt) / 1e3)
		}
		if rc.breakdown > 0 {
			reply, err := p.Srv.Ctl("apply " + rc.breakdown.String())
			var p50, p99 float64
			var n int
			if err == nil {
				_, err = fmt.Sscan(reply, &n, &p50, &p99)
			}
			if err != nil {
				b.Out.Warn("%s: leader-side apply: %v", p.System, err)
			} else {
				r.Extra["leader_apply_p50_us"] = report.Round3(p50 / 1e3)
				r.Extra["leader_apply_p99_us"] = report.Round3(p99 / 1e3)
				what := "raft.Apply"
				if p.System == SysRawNode {
					what = "Replica.Propose"
				}
				notes = append(notes, fmt.Sprintf("#   %s: bare erpc RTT client->leader p50 %s; %s on the leader (no client hop) p50 %s p99 %s over %d",
					p.System, report.HumanUs(float64(p.rtt)/1e3), what, report.HumanUs(p50/1e3), report.HumanUs(p99/1e3), n))
			}
		}
		b.Out.Add(*r)
	}
	b.Out.Finish()
	if !b.Cfg.JSON {
		for _, n := range notes {
			fmt.Fprintln(b.Out.W, n)
		}
		// Ratios against raft-tcp, hashicorp/raft's own transport.
		for j, q := range peers {
			if q.System != "raft-tcp" || merged[j].Ops == 0 {
				continue
			}
			for k, p := range peers {
				if k == j || merged[k].Ops == 0 {
					continue
				}
				fmt.Fprintf(b.Out.W, "#   p50 %s/raft-tcp = %.2f, p99 %s/raft-tcp = %.2f\n",
					p.System, merged[k].H.Quantile(0.5)/merged[j].H.Quantile(0.5),
					p.System, merged[k].H.Quantile(0.99)/merged[j].H.Quantile(0.99))
			}
		}
	}
	return b.Err()
}

// mergeResult adds round r to acc.
func mergeResult(acc, r *meter.Result) {
	if r.Err != nil && acc.Err == nil {
		acc.Err = r.Err
	}
	if acc.FirstErr == nil {
		acc.FirstErr = r.FirstErr
	}
	if acc.Allocs >= 0 && r.Allocs >= 0 && acc.Ops+r.Ops > 0 {
		acc.Allocs = (acc.Allocs*float64(acc.Ops) + r.Allocs*float64(r.Ops)) / float64(acc.Ops+r.Ops)
	}
	acc.H.Merge(&r.H)
	acc.Ops += r.Ops
	acc.Errs += r.Errs
	acc.Secs += r.Secs
}

// raftPeer is one system's cluster process and client.
type raftPeer struct {
	systems.Peer
	rtt time.Duration // bare erpc round trip client -> leader, p50
}

// startRaft starts system's cluster in a server process and connects a
// client to it.
func startRaft(b *scenario.Bench, system string) (*raftPeer, error) {
	defer meter.Watchdog("starting "+system, 60*time.Second)()
	srv, err := proc.Start(proc.Config{System: "raft", Transport: "udp", CPU: b.SrvCPU})
	if err != nil {
		return nil, err
	}
	p := &raftPeer{Peer: systems.Peer{System: system, Srv: srv}}
	tr := "erpc"
	if system == "raft-tcp" || system == SysRawNode {
		tr = system
	}
	rc := b.Cfg.Ext.(*raftConfig)
	reply, err := srv.Ctl(fmt.Sprintf("start %s %s %d %s", tr, systems.SpinString(rc.spin), rc.inflight, b.Cfg.Transport))
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}
	addrs := strings.Split(reply, ",")
	opts := systems.SpinOptions(rc.spin)
	listen := clientListen(b.Cfg.Transport)
	kv, err := newKVClient(system, listen, addrs, opts)
	if err != nil {
		p.Stop()
		return nil, err
	}
	rcl := &raftClient{kv: kv, val: make([]byte, raftValueSize)}
	for i := range raftKeys {
		k := make([]byte, raftKeySize)
		copy(k, fmt.Sprintf("key-%d", i))
		rcl.keys = append(rcl.keys, k)
	}
	p.Cli = rcl
	if p.rtt, err = bareRTT(listen, addrs[0], opts, 2000); err != nil {
		b.Out.Warn("%s: bare RTT: %v", system, err)
	}
	return p, nil
}

// clientListen is the address the client's endpoint listens on for an
// erpc transport.
func clientListen(transport string) string {
	if transport == "shm" {
		return "shm://"
	}
	return "127.0.0.1:0"
}

// bareRTT is the p50 of n empty calls to an unregistered method on target,
// from an endpoint on listen: erpc's round trip with no handler work.
func bareRTT(listen, target string, opts []erpc.Option, n int) (time.Duration, error) {
	ep, err := erpc.Listen(listen, opts...)
	if err != nil {
		return 0, err
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := ep.Dial(ctx, target)
	if err != nil {
		return 0, err
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		_, err := s.Call(ctx, "erpc-bench.none", nil, nil)
		if erpc.CodeOf(err) != erpc.Unimplemented {
			return 0, fmt.Errorf("bare call: %v", err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}

// kvClient is what kvstore's and rawkv's clients have in common: they send
// a PUT to the leader, follow redirects and retry.
type kvClient interface {
	Put(ctx context.Context, key, value []byte) error
	Close() error
}

// newKVClient connects the client of system's store, on an endpoint that
// listens on listen, to the replicas at addrs, the leader's first.
func newKVClient(system, listen string, addrs []string, opts []erpc.Option) (kvClient, error) {
	const attempt = 2 * time.Second // one try at one replica
	if system == SysRawNode {
		cl, err := rawkv.NewClient(1, listen, addrs, opts...)
		if err != nil {
			return nil, err
		}
		cl.AttemptTimeout = attempt
		return cl, nil
	}
	cl, err := kvstore.NewClient(1, listen, addrs, opts...)
	if err != nil {
		return nil, err
	}
	cl.AttemptTimeout = attempt
	return cl, nil
}

// raftClient issues PUTs one at a time through a kvClient.
type raftClient struct {
	kv   kvClient
	keys [][]byte
	val  []byte
	n    int
}

func (c *raftClient) Run(_ meter.Point, m *meter.Meter) error {
	rec := m.Recorder()
	for !m.Stopped() {
		c.n++
		k := c.keys[c.n%len(c.keys)]
		c.val = strconv.AppendInt(c.val[:0], int64(c.n), 10)
		c.val = c.val[:raftValueSize] // the digits, then the previous bytes
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t0 := time.Now()
		err := c.kv.Put(ctx, k, c.val)
		rec.Done(m, t0, err)
		cancel()
	}
	return nil
}

func (c *raftClient) Close() { c.kv.Close() }
