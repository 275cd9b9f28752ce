package erpc

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/balancer"
	"github.com/erpc-go/erpc/resolver"
)

// replica is one address behind a Client's target: its sessions and
// counters. Calls read sess and update the counters lock-free; the rest is
// the control goroutine's, under Client.mu. Ejection is the Client's
// balancer.Outlier's (its state lives in bal.State).
type replica struct {
	bal      balancer.Replica // what the balancer sees; &bal is its identity
	addr     string
	sess     atomic.Pointer[fleetSess] // the session new calls go on; nil if none
	calls    atomic.Uint64
	failures atomic.Uint64

	// Under Client.mu.
	state     ReplicaState
	removed   bool // the resolver no longer lists it
	dialing   bool
	dialFails int
	nextDial  time.Time
	drained   bool         // its server drains: no new session before nextDial
	old       []*fleetSess // sessions that take no new calls, closed once idle
	lastErr   *Error       // its last dial's failure; nil once a dial succeeds
	tlsName   string       // the server name its TLS handshakes verify, if not its host (tlsNameFor)
}

// fleetSess is one session of a replica and the calls on it.
type fleetSess struct {
	s        *Session
	inflight atomic.Int64
	retireAt time.Time // WithMaxSessionAge: replaced after this; zero: never
}

// usable: fs is a session that takes calls. A Client's session that
// went down never comes back (the Client dials another; Session.byClient),
// and one whose server is draining takes no new call from the moment its
// notice arrives: until the control goroutine has retired it (the ready
// set it republishes can lag behind under load), calls keep away from it
// and wait for the ready set rather than fail on it at once.
func (fs *fleetSess) usable() bool {
	return fs != nil && fs.s.downs.Load() == 0 && !fs.s.draining.Load()
}

// idle: no call or stream of the Client's is in flight on it.
func (fs *fleetSess) idle() bool {
	return fs.inflight.Load() == 0 && fs.s.openStreams.Load() == 0
}

func (r *replica) info() ReplicaInfo {
	return ReplicaInfo{Addr: r.addr, State: r.state, InFlight: r.bal.State.InFlight.Load(),
		Calls: r.calls.Load(), Failures: r.failures.Load(), Latency: r.bal.State.Latency()}
}

// sessions is every session the replica holds (under Client.mu).
func (r *replica) sessions() []*Session {
	var out []*Session
	if fs := r.sess.Load(); fs != nil {
		out = append(out, fs.s)
	}
	for _, fs := range r.old {
		out = append(out, fs.s)
	}
	return out
}

// retire moves the current session to the old ones: it takes no new
// calls and closes once its calls have finished.
func (r *replica) retire() {
	if fs := r.sess.Swap(nil); fs != nil {
		r.old = append(r.old, fs)
	}
}

// control is the Client's one goroutine of its own: it dials, ejects and
// returns replicas, retires sessions, and publishes the ready set.
func (c *Client) control() {
	defer close(c.stopped)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		wait := time.Until(c.reconcile(time.Now()))
		t.Reset(max(wait, time.Millisecond))
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// reconcile brings every replica's state up to date, starts the dials
// due, closes idle retired sessions, and returns when it must run next.
func (c *Client) reconcile(now time.Time) time.Time {
	next := now.Add(sweepEvery)
	soon := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}
	var idle []*Session
	resolveNow := false
	c.mu.Lock()
	changed := false
	if now.Sub(c.lastSweep) >= sweepEvery {
		c.lastSweep = now
		changed = c.outlier.Sweep(now)
	}
	for addr, r := range c.replicas {
		if fs := r.sess.Load(); fs != nil {
			switch {
			case fs.s.draining.Load():
				r.retire()
				r.drained = true
				r.nextDial = now.Add(drainRedial)
			case fs.s.downs.Load() > 0: // it failed: redial, soon the first time
				r.retire()
				r.nextDial = now.Add(redial.Delay(r.dialFails, nil))
				r.dialFails++
				resolveNow = true
			case c.opts.maxAge > 0 && now.After(fs.retireAt) && !r.dialing && !r.removed:
				if c.limiter.Allow(now) {
					c.startDial(r) // its successor; it retires once that is up
				} else {
					soon(now.Add(c.connectGap()))
				}
			}
		}
		if r.removed {
			r.retire() // before the idle check below, which may close it now
		}
		keep := r.old[:0]
		for _, fs := range r.old {
			if fs.idle() || fs.s.downs.Load() > 0 {
				idle = append(idle, fs.s)
			} else {
				keep = append(keep, fs)
			}
		}
		clear(r.old[len(keep):])
		r.old = keep
		if len(r.old) > 0 {
			soon(now.Add(5 * time.Millisecond)) // watch them drain
		}
		if r.removed && len(r.old) == 0 && !r.dialing {
			delete(c.replicas, addr)
			changed = true
			continue
		}
		if r.sess.Load() == nil && !r.dialing && !r.removed {
			switch {
			case now.Before(r.nextDial):
				soon(r.nextDial)
			case c.limiter.Allow(now):
				c.startDial(r)
			default:
				soon(now.Add(c.connectGap()))
			}
		}
		if fs := r.sess.Load(); fs != nil && c.opts.maxAge > 0 && !r.dialing {
			soon(fs.retireAt) // (while its successor dials, its answer kicks)
		}
		if st := c.stateOf(r); st != r.state {
			r.state = st
			changed = true
		}
	}
	if changed {
		c.publishLocked()
	}
	res := c.res
	c.mu.Unlock()
	for _, s := range idle {
		s.Close()
	}
	if resolveNow && res != nil {
		res.ResolveNow()
	}
	return next
}

// connectGap is the time one connect slot takes to refill.
func (c *Client) connectGap() time.Duration {
	return time.Duration(float64(time.Second) / c.opts.connectRate)
}

// stateOf is the replica's state from its fields (under Client.mu).
func (c *Client) stateOf(r *replica) ReplicaState {
	fs := r.sess.Load()
	switch {
	case r.removed, fs == nil && r.drained:
		return ReplicaDraining
	case c.outlier.Status(&r.bal) != balancer.Serving:
		return ReplicaEjected
	case fs != nil:
		return ReplicaReady
	}
	return ReplicaConnecting
}

// startDial dials r in the background (under Client.mu).
func (c *Client) startDial(r *replica) {
	r.dialing = true
	c.dialsOut.Add(1)
	tlsName := r.tlsName // read under Client.mu: Update may change it
	go func() {
		defer c.dialsOut.Done()
		ctx, cancel := context.WithCancel(context.Background())
		if tlsName != "" {
			ctx = context.WithValue(ctx, tlsNameKey{}, tlsName)
		}
		go func() { // Close cancels a dial under way
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		s, err := c.ep.Dial(ctx, r.addr)
		cancel()
		c.dialed(r, s, err)
	}()
}

// dialed installs a dial's session, or records its failure.
func (c *Client) dialed(r *replica, s *Session, err error) {
	now := time.Now()
	c.mu.Lock()
	r.dialing = false
	if err != nil {
		r.nextDial = now.Add(redial.Delay(r.dialFails, nil))
		r.dialFails++
		if len(r.old) == 0 { // its drained session has ended too: the server is gone
			r.drained = false // connecting, not draining
		}
		c.noteDialFailed(r, err)
		res := c.res
		c.mu.Unlock()
		if res != nil && !c.closed.Load() {
			res.ResolveNow()
		}
		c.kick()
		return
	}
	if c.closed.Load() || r.removed {
		c.mu.Unlock()
		s.Close()
		c.kick()
		return
	}
	r.dialFails = 0
	r.drained = false
	r.lastErr = nil
	fs := &fleetSess{s: s}
	if c.opts.maxAge > 0 {
		fs.retireAt = now.Add(balancer.AgeJitter(c.opts.maxAge, 0.2, nil))
	}
	r.retire()             // the aged one, if this is its successor
	s.byClient.Store(true) // its redials are the Client's, under the connect rate
	r.sess.Store(fs)
	c.mu.Unlock()
	s.watch.Store(&c.kickFn)
	c.kick()
}

// publishLocked gives the balancer the replicas that take new calls and
// publishes them to the calls (under Client.mu).
func (c *Client) publishLocked() {
	old := c.ready.Load()
	rs := &readySet{byBal: map[*balancer.Replica]*replica{}, all: map[*balancer.Replica]*replica{}}
	bals := []*balancer.Replica{}
	all := make([]*balancer.Replica, 0, len(c.replicas))
	for _, r := range c.replicas {
		rs.all[&r.bal] = r
		if !r.removed { // the ejection cap counts the resolver's replicas only
			all = append(all, &r.bal)
		}
		if r.state == ReplicaReady && r.sess.Load() != nil {
			rs.list = append(rs.list, r)
			rs.byBal[&r.bal] = r
			bals = append(bals, &r.bal)
		}
	}
	c.outlier.SetReplicas(all)
	c.bal.Update(bals)
	switch {
	case len(rs.list) > 0:
		rs.some = closedChan
		if old.some != closedChan {
			close(old.some)
		}
	case old.some == closedChan:
		rs.some = make(chan struct{})
	default:
		rs.some = old.some // its waiters go on waiting
	}
	c.ready.Store(rs)
}

// publish is publishLocked taking the lock.
func (c *Client) publish() {
	c.mu.Lock()
	c.publishLocked()
	c.mu.Unlock()
}

// clientWatcher is a Client as its resolver's Watcher.
type clientWatcher Client

func (w *clientWatcher) Update(st resolver.State) {
	c := (*Client)(w)
	c.mu.Lock()
	seen := make(map[string]bool, len(st.Addresses))
	for _, a := range st.Addresses {
		seen[a.Addr] = true
		if r := c.replicas[a.Addr]; r != nil {
			r.removed = false
			c.renameLocked(r, c.tlsNameFor(a))
			continue
		}
		r := &replica{addr: a.Addr, bal: balancer.Replica{Addr: a.Addr, Weight: a.Weight, Zone: a.Zone}, tlsName: c.tlsNameFor(a)}
		c.replicas[a.Addr] = r
	}
	removed := false
	for addr, r := range c.replicas {
		if !seen[addr] && !r.removed {
			r.removed = true
			r.state = c.stateOf(r)
			removed = true
		}
	}
	if removed { // before Update returns, no new call goes to a removed replica
		c.publishLocked()
	}
	c.resErr = nil
	c.mu.Unlock()
	c.kick()
}

func (w *clientWatcher) Error(err error) {
	c := (*Client)(w)
	c.mu.Lock()
	c.resErr = err
	c.mu.Unlock()
}

// buildResolver starts the resolver of target's scheme. A plain
// "host:port" (passthrough) needs none registered: it is its one address.
func buildResolver(target string, w resolver.Watcher) (resolver.Resolver, error) {
	res, err := resolver.Build(target, w)
	if errors.Is(err, resolver.ErrNoScheme) {
		if t, _ := resolver.Parse(target); t.Scheme == "passthrough" {
			w.Update(resolver.State{Addresses: []resolver.Address{{Addr: t.Endpoint}}})
			return nopResolver{}, nil
		}
	}
	return res, err
}

type nopResolver struct{}

func (nopResolver) ResolveNow() {}
func (nopResolver) Close()      {}
