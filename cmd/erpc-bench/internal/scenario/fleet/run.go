//go:build linux

package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/scenario"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/testbed"
)

// fleetPort is every replica's port (UDP for erpc, TCP for gRPC).
const fleetPort = 31850

// Run runs the fleet scenario: for each part and system, a fresh fleet
// under load, changed once mid-run.
func Run(b *scenario.Bench) error {
	fc := b.Cfg.Ext.(*fleetConfig)
	loadHosts := 1
	if slices.Contains(fc.scenarios, "restart-storm") {
		loadHosts = fc.stormProcs
	}
	return testbed.Run(b.Out.Ew, func(tb *testbed.TB) error {
		f := testbed.NewFleet(tb, fc.servers+1, loadHosts)
		if f.DNS == nil {
			b.Out.Warn("dnsmasq is not installed: the clients get a static:/// list; add needs DNS and is skipped")
		}
		var errs []error
		for _, part := range fc.scenarios {
			for _, sys := range systemsOf(part, b.Cfg.Systems) {
				if part == "add" && f.DNS == nil {
					continue
				}
				r := (&fleetRun{b: b, fc: fc, f: f, part: part, system: sys}).do()
				if r.Err != nil {
					errs = append(errs, fmt.Errorf("%s %s: %w", part, sys, r.Err))
				}
				emit(b, part, r)
			}
		}
		return errors.Join(errs...)
	})
}

// systemsOf are the rows of one part: erpc (P2C), round robin beside it
// in slow, and gRPC where it applies.
func systemsOf(part string, systems []string) []string {
	out := []string{"erpc"}
	if part == "slow" {
		out = append(out, "erpc-rr")
	}
	if slices.Contains(systems, "grpc") && slices.Contains(grpcScenarios, part) {
		out = append(out, "grpc")
	}
	return out
}

// fleetRun is one row: a fresh fleet, its load and the change.
type fleetRun struct {
	b      *scenario.Bench
	fc     *fleetConfig
	f      *testbed.Fleet
	part   string
	system string

	replicas []*testbed.FleetServer // by replica index; nil: not running
	loads    []*proc.Server
	clients  int // across the load processes
}

func (r *fleetRun) addr(i int) netip.AddrPort {
	return netip.AddrPortFrom(r.f.ServerAddrs[i], fleetPort)
}

func (r *fleetRun) startReplica(i int) error {
	s, err := testbed.StartFleetServer(r.f.ServerNS[i], r.addr(i), r.fc.service)
	if err != nil {
		return fmt.Errorf("replica %d: %w", i, err)
	}
	r.replicas[i] = s
	return nil
}

// live publishes replicas [0, n) except skip in DNS.
func (r *fleetRun) live(n, skip int) error {
	if r.f.DNS == nil {
		return nil
	}
	var addrs []netip.Addr
	for i := range n {
		if i != skip {
			addrs = append(addrs, r.f.ServerAddrs[i])
		}
	}
	return r.f.DNS.SetLive(addrs)
}

func (r *fleetRun) stop() {
	for _, l := range r.loads {
		l.Stop()
	}
	for _, s := range r.replicas {
		if s != nil {
			s.Stop()
		}
	}
}

// spec is the load processes' common request.
func (r *fleetRun) spec() loadSpec {
	n := r.fc.servers
	s := loadSpec{System: r.system, Size: r.fc.size, Lanes: r.fc.lanes, Clients: 1, ConnectRate: r.fc.connectRate,
		Seed: uint64(time.Now().UnixNano()), NoCC: !r.fc.cc, DNSPeriodNS: int64(r.fc.dnsPeriod)}
	for i := range n + 1 {
		s.Servers = append(s.Servers, r.f.ServerAddrs[i].String())
	}
	if r.f.DNS != nil {
		s.Target = "dns://" + net.JoinHostPort(r.f.DNS.Addr.String(), "53") + "/" + testbed.FleetName + ":" + strconv.Itoa(fleetPort)
	} else {
		var a []string
		for i := range n {
			a = append(a, r.addr(i).String())
		}
		if r.system == "grpc" {
			s.Static = a
		}
		s.Target = "static:///" + strings.Join(a, ",")
	}
	return s
}

// phases: the load runs warm-up, then "before" (d), the change, "after".
func (r *fleetRun) after() time.Duration {
	if r.part == "add" {
		return max(r.b.Cfg.Dur, addShareWindow+500*time.Millisecond)
	}
	return r.b.Cfg.Dur
}

func (r *fleetRun) do() meter.Result {
	res := meter.Result{System: r.system, Tr: "udp", P: meter.Point{Size: r.fc.size, Resp: 4, Conc: 1, Sessions: 1}, Allocs: -1}
	if r.system == "grpc" {
		res.Tr = "tcp"
	}
	r.replicas = make([]*testbed.FleetServer, r.fc.servers+1)
	defer r.stop()
	ev, calls, logs, err := r.load()
	if err != nil {
		res.Err = err
		return res
	}
	r.rowOf(&res, ev, calls, logs)
	return res
}

// events are the run's times.
type events struct {
	start, measured, change, end time.Time
	resolvable                   time.Time // add: the new replica is in DNS
	connects                     []testbed.ConnectBins
}

// load starts the fleet and the load, changes the fleet, and returns the
// calls.
func (r *fleetRun) load() (events, []call, []callLog, error) {
	var ev events
	for i := range r.fc.servers {
		if err := r.startReplica(i); err != nil {
			return ev, nil, nil, err
		}
	}
	if err := r.live(r.fc.servers, -1); err != nil {
		return ev, nil, nil, err
	}
	procs, perProc := 1, 1
	if r.part == "restart-storm" {
		procs, perProc = r.fc.stormProcs, r.fc.stormCli
	}
	spec := r.spec()
	spec.Clients = perProc
	spec.Rate = r.fc.rate / float64(procs)
	total := r.b.Cfg.Warmup + r.b.Cfg.Dur + r.after()
	spec.DurNS = int64(total)
	js, err := json.Marshal(spec)
	if err != nil {
		return ev, nil, nil, err
	}
	for i := range procs {
		l, err := proc.Start(proc.Config{System: "fleetload", Transport: "udp", Netns: r.f.ClientNS[i], CPU: -1})
		if err != nil {
			return ev, nil, nil, err
		}
		r.loads = append(r.loads, l)
		if _, err := l.Ctl("open " + string(js)); err != nil {
			return ev, nil, nil, fmt.Errorf("load %d: open: %w", i, err)
		}
	}
	r.clients = procs * perProc
	for i, l := range r.loads {
		s, err := l.Ctl("run")
		if err != nil {
			return ev, nil, nil, fmt.Errorf("load %d: run: %w", i, err)
		}
		ns, _ := strconv.ParseInt(s, 10, 64)
		if t := time.Unix(0, ns); i == 0 || t.After(ev.start) {
			ev.start = t
		}
	}
	ev.measured = ev.start.Add(r.b.Cfg.Warmup)
	ev.change = ev.measured.Add(r.b.Cfg.Dur)
	ev.end = ev.change.Add(r.after())
	time.Sleep(time.Until(ev.change))
	if err := r.change(&ev); err != nil {
		return ev, nil, nil, err
	}
	for _, l := range r.loads {
		if err := waitDone(l, time.Until(ev.end)+callTimeout+5*time.Second); err != nil {
			return ev, nil, nil, err
		}
	}
	if r.part == "restart-storm" {
		for _, s := range r.replicas[:r.fc.servers] {
			b, err := s.Connects()
			if err != nil {
				return ev, nil, nil, err
			}
			ev.connects = append(ev.connects, b)
		}
	}
	var calls []call
	var logs []callLog
	for i, l := range r.loads {
		out, err := l.Ctl("log")
		if err != nil {
			return ev, nil, nil, err
		}
		var lg callLog
		if err := json.Unmarshal([]byte(out), &lg); err != nil {
			return ev, nil, nil, err
		}
		logs = append(logs, lg)
		calls = append(calls, callsOf(lg, i*perProc)...)
	}
	return ev, calls, logs, nil
}

func waitDone(l *proc.Server, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		s, err := l.Ctl("status")
		if err != nil || s == "done" {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("load did not finish")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// change does the part's change to the fleet at ev.change.
func (r *fleetRun) change(ev *events) error {
	switch r.part {
	case "kill":
		r.replicas[0].Kill()
		r.replicas[0] = nil
	case "drain":
		if err := r.live(r.fc.servers, 0); err != nil {
			return err
		}
		return r.replicas[0].Drain()
	case "add":
		n := r.fc.servers
		if err := r.startReplica(n); err != nil {
			return err
		}
		if err := r.live(n+1, -1); err != nil {
			return err
		}
		ev.resolvable = time.Now()
	case "slow":
		return r.replicas[0].SetDelay(slowFactor * r.fc.service)
	case "restart-storm":
		for i := range r.fc.servers {
			r.replicas[i].Kill()
			r.replicas[i] = nil
		}
		for i := range r.fc.servers {
			if err := r.startReplica(i); err != nil {
				return err
			}
		}
	}
	return nil
}
