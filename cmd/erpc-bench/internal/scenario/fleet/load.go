package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/openloop"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// The load process, "fleetload": started by the driver in a client
// namespace (proc.Start with Netns), so that its clients resolve the
// testbed's name and dial from there. Commands: "open <loadSpec JSON>"
// makes the clients and returns once each has completed a call; "run"
// starts the open-loop load and returns its start (Unix ns); "status" is
// "running" or "done"; "log" returns the calls (callLog JSON).

// loadSpec is what the driver asks of a load process.
type loadSpec struct {
	System      string   `json:"system"` // erpc, erpc-rr, grpc
	Target      string   `json:"target"` // the client's target
	Static      []string `json:"static"` // gRPC without DNS: the replicas' addresses
	Servers     []string `json:"servers"`
	Clients     int      `json:"clients"`
	ConnectRate float64  `json:"connect_rate"`
	Size        int      `json:"size"`
	Rate        float64  `json:"rate"`
	Lanes       int      `json:"lanes"`
	DurNS       int64    `json:"dur_ns"`
	Seed        uint64   `json:"seed"`
	NoCC        bool     `json:"nocc"`          // erpc: WithoutCongestionControl
	DNSPeriodNS int64    `json:"dns_period_ns"` // erpc: the dns resolver's period (0: the library's)
}

// callLog is a load process's record of its calls. Each call is
// [planned send, µs since StartNS; latency µs from the planned send, -1
// failed; replica index in loadSpec.Servers, -1 unknown; client index].
type callLog struct {
	StartNS  int64            `json:"start_ns"`
	Calls    [][4]int64       `json:"calls"`
	Errors   map[string]int64 `json:"errors"`   // failed calls by message (the first few messages)
	Counters map[string]int64 `json:"counters"` // the system's own (erpc: retried never-ran calls)
	LagP99us float64          `json:"lag_p99_us"`
}

// fleetClient is one client of the fleet: erpc's Client or a gRPC
// ClientConn.
type fleetClient interface {
	call(ctx context.Context, req []byte) ([]byte, error)
	close()
}

// clientMakers make a system's clients (erpc_client.go, grpc_client.go).
var clientMakers = map[string]func(loadSpec) (fleetClient, error){}

// callTimeout bounds one call: longer than any recovery measured.
const callTimeout = 10 * time.Second

type loadProc struct {
	spec    loadSpec
	clients []fleetClient
	srvIdx  map[[4]byte]int64
	req     []byte
	running atomic.Bool

	mu  sync.Mutex
	log callLog
}

func newLoadProc(proc.Config) (proc.Impl, error) { return &loadProc{}, nil }

func (p *loadProc) Addr() string { return "ready" }

func (p *loadProc) Close() {
	for _, c := range p.clients {
		c.close()
	}
}

func (p *loadProc) Control(args []string) (string, error) {
	switch args[0] {
	case "open":
		if len(args) != 2 {
			return "", errors.New("open <spec>")
		}
		return "", p.open(args[1])
	case "run":
		if p.running.Swap(true) {
			return "", errors.New("already running")
		}
		start := make(chan int64)
		go p.run(start)
		return strconv.FormatInt(<-start, 10), nil
	case "status":
		if p.running.Load() {
			return "running", nil
		}
		return "done", nil
	case "log":
		p.mu.Lock()
		defer p.mu.Unlock()
		b, err := json.Marshal(p.log)
		return string(b), err
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

func (p *loadProc) open(spec string) error {
	if err := json.Unmarshal([]byte(spec), &p.spec); err != nil {
		return err
	}
	mk, ok := clientMakers[p.spec.System]
	if !ok {
		return fmt.Errorf("fleetload: no client for %q", p.spec.System)
	}
	p.srvIdx = map[[4]byte]int64{}
	for i, s := range p.spec.Servers {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return err
		}
		p.srvIdx[a.As4()] = int64(i)
	}
	p.req = make([]byte, max(p.spec.Size, 1))
	p.log.Errors, p.log.Counters = map[string]int64{}, map[string]int64{}
	for range p.spec.Clients {
		c, err := mk(p.spec)
		if err != nil {
			return err
		}
		p.clients = append(p.clients, c)
	}
	// Each client is ready once a call went through.
	var wg sync.WaitGroup
	errs := make([]error, len(p.clients))
	for i, c := range p.clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for {
				_, err := c.call(ctx, p.req)
				if err == nil || ctx.Err() != nil {
					errs[i] = err
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadTarget is the open-loop generator's target: each call on its own
// goroutine (the clients' Call blocks), logged as it ends.
type loadTarget struct {
	p     *loadProc
	start time.Time
}

func (t *loadTarget) Send(ctx context.Context, _ int, c *openloop.Call) {
	planned := c.Planned()
	cli := c.Sess
	go func() {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := t.p.clients[cli].call(cctx, t.p.req)
		cancel()
		lat := time.Since(planned)
		rec := [4]int64{int64(planned.Sub(t.start) / time.Microsecond), int64(lat / time.Microsecond), -1, int64(cli)}
		if err != nil {
			rec[1] = -1
		} else if len(resp) == 4 {
			if i, ok := t.p.srvIdx[[4]byte(resp)]; ok {
				rec[2] = i
			}
		}
		t.p.mu.Lock()
		t.p.log.Calls = append(t.p.log.Calls, rec)
		if err != nil {
			if msg := err.Error(); len(t.p.log.Errors) < 8 || t.p.log.Errors[msg] > 0 {
				t.p.log.Errors[msg]++
			}
		}
		t.p.mu.Unlock()
		c.Finish(err, false, 0)
	}()
}

func (p *loadProc) run(started chan<- int64) {
	defer p.running.Store(false)
	start := time.Now()
	p.log.StartNS = start.UnixNano()
	started <- p.log.StartNS
	st := openloop.Run(&loadTarget{p: p, start: start}, openloop.Plan{
		Rate: p.spec.Rate, Lanes: p.spec.Lanes, Dur: time.Duration(p.spec.DurNS),
		Drain: callTimeout + time.Second, Seed: p.spec.Seed, Sessions: len(p.clients),
		NewDraw:    func(*rand.Rand) func(*openloop.Call) { return func(*openloop.Call) {} },
		Resolution: time.Microsecond,
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.LagP99us = st.Lag.Quantile(0.99) / 1e3
	for _, c := range p.clients {
		if cc, ok := c.(interface{ counters() map[string]int64 }); ok {
			for k, v := range cc.counters() {
				p.log.Counters[k] += v
			}
		}
	}
}

func init() { proc.Register("fleetload", newLoadProc) }
