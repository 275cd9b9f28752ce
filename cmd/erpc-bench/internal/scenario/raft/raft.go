package raft

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	erpcraft "github.com/erpc-go/erpc/contrib/raft"
	"github.com/erpc-go/erpc/contrib/raft/kvstore"
	"github.com/erpc-go/erpc/contrib/raft/rawkv"
	"github.com/hashicorp/raft"

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
// own shape (raft_rawnode.go): contrib/raft/rawkv, etcd's raft RawNode
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

// raftConfig is the raft scenario's part of the command line.
type raftConfig struct {
	spin      time.Duration // erpc.WithSpin for the client and erpc's replicas, or spinDefault
	inflight  int           // contrib/raft Config.MaxInFlight
	rounds    int           // alternating rounds; -d is split between them
	breakdown time.Duration // leader-side Apply measurement per system
}

var raftCfg raftConfig

// ParseFlags parses "raft [flags]".
func ParseFlags(args []string, stderr io.Writer) (*scenario.Config, error) {
	c := &scenario.Config{Settings: report.Settings{Scenario: "raft", Transport: "udp"}, Sizes: []int{raftKeySize + raftValueSize}, Conc: []int{1}}
	rc := raftConfig{}
	fs := flag.NewFlagSet("erpc-bench raft", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.Dur, "d", 3*time.Second, "measured duration per system (split between the rounds)")
	fs.DurationVar(&c.Warmup, "warmup", 500*time.Millisecond, "warm-up before each round, discarded")
	vs := fs.String("vs", "", "systems to run beside erpc: raft-tcp (hashicorp/raft's NetworkTransport on TCP loopback), "+
		SysRawNode+" (etcd raft's RawNode on each replica's erpc event loop), all")
	fs.BoolVar(&c.Json, "json", false, "one JSON object per line instead of a table")
	fs.BoolVar(&c.Pin, "pin", true, "pin the cluster process to CPU 0 and the client to CPU 1 (when there are two or more)")
	fs.StringVar(&c.Transport, "transport", "udp", "erpc transport of the replicas and the client: udp (loopback) or shm (same host; raft-tcp still replicates over TCP)")
	// Several endpoints share the cluster's core: equal fixed spins keep
	// any of them from parking while the others poll (see erpc.WithSpin).
	rc.spin = time.Millisecond
	fs.Func("spin", "erpc event-loop spin after work (erpc.WithSpin) for the client and erpc's replicas, or \"default\" for erpc's adaptive window (default 1ms; raft-tcp's replicas get 0)", func(v string) (err error) {
		rc.spin, err = systems.ParseSpin(v)
		return err
	})
	fs.IntVar(&rc.inflight, "inflight", 0, "contrib/raft pipeline depth (Config.MaxInFlight; 0: default, 1: no pipelining)")
	fs.IntVar(&rc.rounds, "rounds", 2, "rounds per system, in alternating order (A B B A ...)")
	fs.DurationVar(&rc.breakdown, "breakdown", time.Second, "time per system spent measuring raft.Apply on the leader (0: skip)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.Transport != "udp" && c.Transport != "shm" {
		return nil, fmt.Errorf("-transport: the raft scenario runs on udp or shm (the cluster is another process)")
	}
	if c.Dur <= 0 || c.Warmup < 0 || rc.rounds < 1 || rc.breakdown < 0 {
		return nil, fmt.Errorf("-d and -rounds must be positive, -warmup and -breakdown not negative")
	}
	c.Systems = []string{"erpc"}
	// -vs names and the systems they add.
	raftSystems := map[string][]string{"erpc": nil, "raft-tcp": {"raft-tcp"}, SysRawNode: {SysRawNode},
		"rawnode": {SysRawNode}, "all": {"raft-tcp", SysRawNode}}
	for _, s := range scenario.SplitList(*vs) {
		add, ok := raftSystems[s]
		if !ok {
			return nil, fmt.Errorf("-vs: the raft scenario compares erpc with raft-tcp and %s only, not %q", SysRawNode, s)
		}
		for _, s := range add {
			if !slices.Contains(c.Systems, s) {
				c.Systems = append(c.Systems, s)
			}
		}
	}
	raftCfg = rc
	return c, nil
}

const (
	raftKeySize   = 16
	raftValueSize = 64
	raftRespSize  = 3 // status, found, empty value
	raftKeys      = 1000
)

// RunRaft measures every system in alternating rounds and reports each
// once, its rounds merged.
func Run(b *scenario.Bench) error {
	rc := raftCfg
	if !b.Cfg.Json {
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
	if !b.Cfg.Json {
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
	srv, err := proc.Start(proc.Config{System: "raft", Transport: "udp", Cpu: b.SrvCPU})
	if err != nil {
		return nil, err
	}
	p := &raftPeer{Peer: systems.Peer{System: system, Srv: srv}}
	tr := "erpc"
	if system == "raft-tcp" || system == SysRawNode {
		tr = system
	}
	reply, err := srv.Ctl(fmt.Sprintf("start %s %s %d %s", tr, systems.SpinString(raftCfg.spin), raftCfg.inflight, b.Cfg.Transport))
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("starting the cluster: %w", err)
	}
	addrs := strings.Split(reply, ",")
	opts := systems.SpinOptions(raftCfg.spin)
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

// raftServer is the cluster process. It starts idle; "start" brings the
// cluster up, "apply" measures raft.Apply on the leader.
type raftServer struct {
	mu sync.Mutex
	c  *kvstore.Cluster
	rk *rawkv.Cluster // etcd-rawnode's cluster, instead of c
}

func newRaftServer(proc.Config) (proc.Impl, error) { return &raftServer{}, nil }

func (s *raftServer) Addr() string { return "-" }

func (s *raftServer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	if s.rk != nil {
		s.rk.Close()
		s.rk = nil
	}
}

func (s *raftServer) Control(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case args[0] == "start" && len(args) == 5:
		if s.c != nil || s.rk != nil {
			return "", errors.New("already started")
		}
		spin, err := systems.ParseSpin(args[2])
		if err != nil {
			return "", err
		}
		inflight, err := strconv.Atoi(args[3])
		if err != nil {
			return "", err
		}
		return s.start(args[1], spin, inflight, args[4])
	case args[0] == "apply" && len(args) == 2:
		d, err := time.ParseDuration(args[1])
		if err != nil {
			return "", err
		}
		return s.apply(d)
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(args, " "))
}

// start brings up the cluster, its erpc endpoints on network (udp or shm),
// and returns the client API addresses, the leader's first.
func (s *raftServer) start(transport string, spin time.Duration, inflight int, network string) (string, error) {
	if transport == SysRawNode {
		return s.startRawNode(spin, network)
	}
	if transport == "raft-tcp" {
		// The replicas' erpc endpoints carry only the client hop there. On
		// the cluster's one core a spinning loop (runtime.Gosched) would
		// hold off the netpoller that raft-tcp's sockets wait in: the Go
		// scheduler polls it only when no goroutine is runnable.
		spin = 0
	}
	c, err := kvstore.StartCluster(kvstore.ClusterConfig{
		Network:         network,
		RaftTransport:   transport,
		EndpointOptions: systems.SpinOptions(spin),
		Transport:       erpcraft.Config{MaxInFlight: inflight},
		Raft: func(rc *raft.Config) {
			// raft's own timeouts (1 s), not the tests' short ones: the
			// benchmark measures the commit path, not elections.
			d := raft.DefaultConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout = d.HeartbeatTimeout, d.ElectionTimeout
			rc.LeaderLeaseTimeout, rc.CommitTimeout = d.LeaderLeaseTimeout, d.CommitTimeout
		},
	})
	if err != nil {
		return "", err
	}
	l, err := c.Leader(10 * time.Second)
	if err != nil {
		c.Close()
		return "", err
	}
	s.c = c
	return leaderFirst(c.APIAddrs(), l), nil
}

// leaderFirst is the control line's list of addresses: the leader's (at
// index l) first, then the others.
func leaderFirst(addrs []string, l int) string {
	out := []string{addrs[l]}
	for i, a := range addrs {
		if i != l {
			out = append(out, a)
		}
	}
	return strings.Join(out, ",")
}

// apply issues PUTs as raft.Apply on the leader, one at a time, for d
// after a short warm-up, and returns "count p50_ns p99_ns".
func (s *raftServer) apply(d time.Duration) (string, error) {
	if s.rk != nil {
		return s.proposeRawNode(d)
	}
	if s.c == nil {
		return "", errors.New("not started")
	}
	key := make([]byte, raftKeySize)
	val := make([]byte, raftValueSize)
	lat := make([]time.Duration, 0, 1<<16)
	warm := time.Now().Add(d / 5)
	end := warm.Add(d)
	for i := 0; time.Now().Before(end); i++ {
		l, err := s.c.Leader(5 * time.Second)
		if err != nil {
			return "", err
		}
		copy(key, fmt.Sprintf("key-%d", i%raftKeys))
		cmd := kvstore.Command{Op: kvstore.OpPut, Key: key, Value: val}
		t0 := time.Now()
		err = s.c.Replica(l).Raft.Apply(kvstore.Encode(&cmd), 5*time.Second).Error()
		dt := time.Since(t0)
		if err != nil {
			continue
		}
		if t0.After(warm) {
			lat = append(lat, dt)
		}
	}
	if len(lat) == 0 {
		return "", errors.New("no Apply succeeded")
	}
	return latencySummary(lat), nil
}

// latencySummary sorts lat and returns "count p50_ns p99_ns".
func latencySummary(lat []time.Duration) string {
	slices.Sort(lat)
	q := func(p float64) int64 { return int64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	return fmt.Sprintf("%d %d %d", len(lat), q(0.5), q(0.99))
}

func init() { proc.Register("raft", newRaftServer) }
