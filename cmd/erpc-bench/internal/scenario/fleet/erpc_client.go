package fleet

import (
	"context"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/balancer"
	"github.com/erpc-go/erpc/resolver"
)

// erpc's rows: an erpc.Client over the target (dns:/// on the testbed's
// DNS server, or static:///), with P2C (the default, system "erpc") or
// round robin ("erpc-rr"), and WithConnectRate; with -cc=false, without
// congestion control (WithoutCongestionControl).
type erpcClient struct{ c *erpc.Client }

// registerDNS makes erpc's dns:/// resolver look the name up every period
// (the library's default is 30 s: too long to see a replica join within
// the add scenario's 2 s).
var registerDNS sync.Once

func newErpcClient(s loadSpec) (fleetClient, error) {
	if s.DNSPeriodNS > 0 {
		registerDNS.Do(func() {
			resolver.Register(resolver.NewDNSBuilder(resolver.WithDNSPeriod(time.Duration(s.DNSPeriodNS))))
		})
	}
	b := balancer.P2C()
	if s.System == "erpc-rr" {
		b = balancer.RoundRobin()
	}
	opts := []erpc.Option{erpc.WithBalancer(b), erpc.WithConnectRate(s.ConnectRate), erpc.Insecure()}
	if s.NoCC {
		opts = append(opts, erpc.WithoutCongestionControl())
	}
	c, err := erpc.NewClient(s.Target, opts...)
	if err != nil {
		return nil, err
	}
	return &erpcClient{c: c}, nil
}

func (c *erpcClient) call(ctx context.Context, req []byte) ([]byte, error) {
	return c.c.Call(ctx, "Echo", req, nil)
}

func (c *erpcClient) close() { c.c.Close() }

// counters: the call attempts that failed, over the replicas the client
// still knows (one that left the resolver's set is forgotten); those
// beyond the calls that failed were repeated on another replica. And the
// connects its endpoint sent over the whole run (opening included,
// resends included: Stats.ConnectsSent).
func (c *erpcClient) counters() map[string]int64 {
	var failed int64
	for _, r := range c.c.Replicas() {
		failed += int64(r.Failures)
	}
	return map[string]int64{"failed_attempts": failed, "connects_sent": int64(c.c.Endpoint().Stats().ConnectsSent)}
}

func init() {
	clientMakers["erpc"] = newErpcClient
	clientMakers["erpc-rr"] = newErpcClient
}
