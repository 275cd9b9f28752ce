package resolver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"
)

// dnsResolver re-resolves one target on its own goroutine: at once, then
// every period, sooner on ResolveNow (never twice within minInterval), and
// after a failure on a jittered exponential backoff. It reports a set only
// when it changed, and on failure keeps the last good one (Watcher.Error).
type dnsResolver struct {
	cfg        dnsConfig
	q          dnsQuery
	lookup     DNSLookup
	rep        *Reporter
	resolveNow chan struct{} // capacity 1: a burst of ResolveNow is one request
	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{}
	closeOnce  sync.Once
}

func startDNS(cfg dnsConfig, q dnsQuery, lookup DNSLookup, w Watcher) *dnsResolver {
	ctx, cancel := context.WithCancel(context.Background())
	r := &dnsResolver{
		cfg: cfg, q: q, lookup: lookup, rep: NewReporter(w),
		resolveNow: make(chan struct{}, 1),
		ctx:        ctx, cancel: cancel, done: make(chan struct{}),
	}
	go r.run()
	return r
}

func (r *dnsResolver) ResolveNow() {
	select {
	case r.resolveNow <- struct{}{}:
	default: // one is already pending
	}
}

// Close cancels a look-up in progress and waits for the goroutine, so no
// Watcher call follows its return.
func (r *dnsResolver) Close() {
	r.closeOnce.Do(func() {
		r.cancel()
		r.rep.Close()
		<-r.done
	})
}

func (r *dnsResolver) run() {
	defer close(r.done)
	failures := 0
	var last time.Time // when the last look-up started; zero before the first
	for next := r.cfg.clock.Now(); ; {
		if !r.waitUntil(next, last) {
			return
		}
		last = r.cfg.clock.Now()
		addrs, err := r.resolve()
		if r.ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			r.rep.Error(err)
			next = last.Add(r.backoff(failures))
			continue
		}
		failures = 0
		r.rep.Update(State{Addresses: addrs})
		next = last.Add(r.cfg.period)
	}
}

// waitUntil waits for next, or for Close (false). ResolveNow brings next
// forward to now, but never to within minInterval of the last look-up.
func (r *dnsResolver) waitUntil(next, last time.Time) bool {
	for {
		d := next.Sub(r.cfg.clock.Now())
		if d <= 0 {
			return r.ctx.Err() == nil
		}
		t := r.cfg.clock.NewTimer(d)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return false
		case <-t.C():
			return true
		case <-r.resolveNow:
			t.Stop()
			soonest := last.Add(r.cfg.minInterval)
			if now := r.cfg.clock.Now(); now.After(soonest) {
				soonest = now
			}
			if soonest.Before(next) {
				next = soonest
			}
		}
	}
}

// backoff is the wait after the n-th consecutive failure: base·2^(n-1)
// capped at max, jittered by ±20 %.
func (r *dnsResolver) backoff(n int) time.Duration {
	d := r.cfg.backoffBase
	for i := 1; i < n && d < r.cfg.backoffMax; i++ {
		d *= 2
	}
	d = min(d, r.cfg.backoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// resolve makes one look-up, bounded by the timeout and by Close.
func (r *dnsResolver) resolve() ([]Address, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.timeout)
	defer cancel()
	if r.q.srv != "" {
		return r.resolveSRV(ctx)
	}
	addrs, err := r.resolveHost(ctx, r.q.host, r.q.port)
	if err != nil {
		return nil, fmt.Errorf("resolver: dns look-up of %s: %w", r.q.host, err)
	}
	return addrs, nil
}

var errNoAddresses = errors.New("no addresses")

func (r *dnsResolver) resolveHost(ctx context.Context, host, port string) ([]Address, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []Address{{Addr: net.JoinHostPort(host, port)}}, nil
	}
	ips, err := r.lookup.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, errNoAddresses
	}
	addrs := make([]Address, 0, len(ips))
	for _, ip := range ips {
		addrs = append(addrs, Address{Addr: net.JoinHostPort(ip.String(), port)})
	}
	return addrs, nil
}

// resolveSRV looks up the SRV records, then each record's target; a
// target that fails is left out unless all do.
func (r *dnsResolver) resolveSRV(ctx context.Context) ([]Address, error) {
	_, srvs, err := r.lookup.LookupSRV(ctx, "", "", r.q.srv)
	if err == nil && len(srvs) == 0 {
		err = errNoAddresses
	}
	if err != nil {
		return nil, fmt.Errorf("resolver: dns SRV look-up of %s: %w", r.q.srv, err)
	}
	var addrs []Address
	var firstErr error
	for _, s := range srvs {
		found, err := r.resolveHost(ctx, s.Target, strconv.Itoa(int(s.Port)))
		if err != nil {
			firstErr = cmp.Or(firstErr, fmt.Errorf("resolver: dns look-up of SRV target %s: %w", s.Target, err))
			continue
		}
		for _, a := range found {
			a.Weight = uint32(s.Weight)
			a.Attrs = map[string]string{"priority": strconv.Itoa(int(s.Priority)), "srv_target": s.Target}
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, firstErr
	}
	return addrs, nil
}
