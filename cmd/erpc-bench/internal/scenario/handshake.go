package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// The handshake scenario: the time from opening a fresh session (a new
// connection, or for erpc a new endpoint and session) to its first call's
// answer, a 32-byte echo, over -dials dials per system, the systems taking
// turns dial by dial so that drift affects all alike. Each row is one
// system: p50_us and p99_us are the handshake's quantiles, ops the dials
// that succeeded, errors those that failed, qps dials per second of the
// system's own time. The first handshakeWarmup dials of each system are
// discarded (code paths, the server's first connection).

// handshakeWarmup is the dials per system discarded before measuring.
const handshakeWarmup = 5

// handshakeVs is the -vs of the handshake scenario when none is given.
const handshakeVs = "erpc-tls,grpc-tls,quic"

// RunHandshake runs the handshake scenario.
func (b *Bench) RunHandshake() error {
	type contestant struct {
		peer *systems.Peer
		hs   systems.Handshaker
		res  meter.Result
		busy time.Duration
	}
	var cs []*contestant
	for _, s := range b.Cfg.Systems {
		p, err := b.start(s, 0)
		if err != nil {
			b.Fail(s, err)
			continue
		}
		defer p.Stop()
		hs, ok := p.Cli.(systems.Handshaker)
		if !ok {
			b.Fail(s, fmt.Errorf("it cannot time a fresh session (systems.Handshaker)"))
			continue
		}
		pt := meter.Point{Size: 32, Resp: 32, Conc: 1, Sessions: 1}
		cs = append(cs, &contestant{peer: p, hs: hs,
			res: meter.Result{P: pt, System: s, Tr: systems.TransportOf(s, b.Cfg.Transport)}})
	}
	b.Out.Expect(len(cs))
	stop := meter.Watchdog("handshake", time.Duration(b.Cfg.Dials+handshakeWarmup)*time.Duration(len(cs))*time.Second+time.Minute)
	defer stop()
	for i := range handshakeWarmup + b.Cfg.Dials {
		for j := range cs {
			c := cs[(i+j)%len(cs)]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			d, err := c.hs.Handshake(ctx)
			cancel()
			if i < handshakeWarmup {
				continue
			}
			c.busy += d
			if err != nil {
				c.res.Errs++
				if c.res.FirstErr == nil {
					c.res.FirstErr = err
				}
				continue
			}
			c.res.Ops++
			c.res.H.Record(d)
		}
	}
	for _, c := range cs {
		c.res.Secs = c.busy.Seconds()
		c.res.Allocs = -1
		b.Out.Add(c.res)
	}
	return b.Err()
}
