package erpc

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/erpc-go/erpc/balancer"
	"github.com/erpc-go/erpc/codec"
)

// inlineTried is how many tried replicas a call remembers without
// allocating; it remembers any more in a slice of its own.
const inlineTried = 8

// placement is one call's way over the fleet: its attempts, each on a
// replica the balancer picks, and the replicas tried so far. It lives on
// the caller's stack.
type placement struct {
	c         *Client
	method    string
	pol       MethodPolicy
	info      balancer.PickInfo
	tried     [inlineTried]*replica
	ntried    int
	moreTried []*replica // the tried ones past inlineTried
	attempts  int        // made so far
	retries   int        // of which retries of calls that may have run
}

// attempt is one copy of a call on one replica's session.
type attempt struct {
	r     *replica
	fs    *fleetSess
	start time.Time
	probe bool // the outlier detector's probe of an ejected replica
}

func (p *placement) init(c *Client, ctx context.Context, method string) {
	p.c, p.method = c, method
	p.pol = c.opts.policies[method]
	if p.pol.MaxAttempts <= 0 {
		p.pol.MaxAttempts = defaultMaxAttempts
	}
	p.info.Method = method
	if k, ok := ctx.Value(hashKey{}).(string); ok {
		p.info.Key, p.info.HasKey = k, true
	}
	c.budget.Deposit(time.Now())
}

// next picks a replica for the next attempt, waiting for one to be ready
// if none is, and counts the attempt in flight there.
func (p *placement) next(ctx context.Context) (attempt, error) {
	spins := 0
	for {
		rs, err := p.c.waitReady(ctx, p.method)
		if err != nil {
			return attempt{}, err
		}
		now := time.Now()
		if a, ok := p.probe(rs, now); ok {
			return a, nil
		}
		p.info.Start = now
		r := p.pick(rs)
		fs := r.sess.Load()
		if !fs.usable() { // it just left the ready set, which is republished soon
			p.remember(r) // (not an attempt: pick keeps away from it)
			if ctx.Err() != nil {
				e := contextError(ctx)
				e.Msg = fmt.Sprintf("call %q to %s: %s while waiting for a ready replica", p.method, p.c.target, e.Msg)
				return attempt{}, notRun(e)
			}
			if spins++; spins > 16 {
				time.Sleep(time.Millisecond)
			} else {
				runtime.Gosched()
			}
			continue
		}
		r.bal.State.InFlight.Add(1)
		fs.inflight.Add(1)
		p.remember(r)
		p.attempts++
		return attempt{r: r, fs: fs, start: now}, nil
	}
}

// probe makes this attempt the outlier detector's probe of an ejected
// replica whose ejection has passed, if one is due (lock-free when none
// is): a success brings it back.
func (p *placement) probe(rs *readySet, now time.Time) (attempt, bool) {
	br := p.c.outlier.Probe(now)
	if br == nil {
		return attempt{}, false
	}
	r := rs.all[br]
	if cur := p.c.ready.Load(); r == nil {
		r = cur.all[br]
	}
	var fs *fleetSess
	if r != nil {
		fs = r.sess.Load()
	}
	if !fs.usable() || p.wasTried(r) { // no session to probe on: later
		p.c.outlier.ObserveProbe(br, balancer.DoneInfo{NeverRan: true}, now)
		return attempt{}, false
	}
	r.bal.State.InFlight.Add(1)
	fs.inflight.Add(1)
	p.remember(r)
	p.attempts++
	return attempt{r: r, fs: fs, start: now, probe: true}, true
}

// pick asks the balancer, then keeps away from replicas tried already
// while another is ready.
func (p *placement) pick(rs *readySet) *replica {
	br := p.c.bal.Pick(p.info) // p.info.Start: this attempt's (next)
	r := rs.byBal[br]
	if cur := p.c.ready.Load(); r == nil && br != nil && cur != rs {
		r = cur.byBal[br] // the balancer was updated since rs
	}
	if r != nil && !p.wasTried(r) {
		return r
	}
	for i := range rs.list {
		if q := rs.list[(i+p.attempts)%len(rs.list)]; !p.wasTried(q) {
			return q
		}
	}
	if r != nil {
		return r
	}
	return rs.list[p.attempts%len(rs.list)]
}

func (p *placement) wasTried(r *replica) bool {
	for _, q := range p.tried[:p.ntried] {
		if q == r {
			return true
		}
	}
	for _, q := range p.moreTried {
		if q == r {
			return true
		}
	}
	return false
}

// remember adds r to the replicas tried, all of which the call keeps
// away from while another is ready (inline for the first few).
func (p *placement) remember(r *replica) {
	switch {
	case p.wasTried(r):
	case p.ntried < inlineTried:
		p.tried[p.ntried] = r
		p.ntried++
	default:
		p.moreTried = append(p.moreTried, r)
	}
}

// record ends attempt a with err: the replica's counters, the balancer,
// and the count of failures in a row that ejects a replica.
func (p *placement) record(a attempt, err error) {
	r := a.r
	now := time.Now()
	lat := now.Sub(a.start)
	r.bal.State.InFlight.Add(-1)
	a.fs.inflight.Add(-1)
	r.calls.Add(1)
	d := balancer.DoneInfo{Latency: lat, Start: a.start, Err: err}
	if err != nil {
		r.failures.Add(1)
		d.NeverRan = NotExecuted(err)
	}
	if !a.probe {
		p.c.bal.Done(&r.bal, d) // the balancer keeps the latency average
	}
	if err != nil && (handlerAnswer(err) || !replicaFault(err)) {
		d.Err = nil // an answer, not the replica's fault: it counts as a success
	}
	var changed bool
	if a.probe {
		changed = p.c.outlier.ObserveProbe(&r.bal, d, now)
	} else {
		changed = p.c.outlier.Observe(&r.bal, d, now)
	}
	if changed {
		p.c.kick() // the control goroutine republishes the ready set
	}
}

// replicaFault reports whether a failure counts against the replica
// (for ejection): its session failed or it could not serve (Unavailable,
// Internal), as opposed to a handler's answer (any code: record checks
// handlerAnswer first)
// or the caller's own deadline or cancel (a replica too slow for its
// callers is the latency check's to eject).
func replicaFault(err error) bool {
	switch CodeOf(err) {
	case Unavailable, Internal:
		return true
	}
	return false
}

// retry decides whether a failed call goes again: a call that never ran,
// on another replica, up to MaxAttempts; one that may have run only if
// its method is Idempotent and the budget allows, after a pause.
func (p *placement) retry(ctx context.Context, err error) bool {
	if ctx.Err() != nil || p.attempts >= p.pol.MaxAttempts || p.c.closed.Load() {
		return false
	}
	if NotExecuted(err) {
		return true
	}
	if !p.pol.Idempotent || !retryable(err) || !p.c.budget.Withdraw(time.Now()) {
		return false
	}
	p.retries++
	t := time.NewTimer(retryDelay(p.retries))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryable: failures an idempotent method is retried after: the
// server or its session failed, or it asked for another try; never a
// handler's own answer, whatever its code (the handler ran and decided).
func retryable(err error) bool {
	if handlerAnswer(err) {
		return false
	}
	switch CodeOf(err) {
	case Unavailable, Aborted, ResourceExhausted:
		return true
	}
	return false
}

// Call sends req to method on one of the replicas and waits for the
// response, as Session.Call does, trying another replica when the call
// never ran there (and, for an Idempotent method, when it failed, within
// the retry budget). The endpoint's interceptors and StatsHandler see each
// attempt, with its replica's address (CallInfo.Peer, and CallInfo.Target
// its address as the resolver gave it). A raw call's affinity key for a
// hashing balancer comes from ctx (ContextWithHashKey).
func (c *Client) Call(ctx context.Context, method string, req, resp []byte) ([]byte, error) {
	var p placement
	p.init(c, ctx, method)
	if p.pol.Hedge > 0 {
		hp := p // on the heap (the hedge's goroutines share it); p stays on the stack
		return c.callHedged(ctx, &hp, req, resp, nil)
	}
	for {
		a, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		out, err := a.fs.s.Call(ctx, method, req, resp)
		p.record(a, err)
		if err == nil || !p.retry(ctx, err) {
			return out, err
		}
	}
}

// invoke makes a typed call (Invoke) as Call does, each attempt through
// the replica's session (its interceptors see the typed values).
func (c *Client) invoke(ctx context.Context, m typedMethod, req, resp any, reqCodec, respCodec codec.Codec) error {
	var p placement
	p.init(c, ctx, m.name)
	if p.pol.Hedge > 0 && c.ep.clientIntercept == nil {
		b, err := reqCodec.Marshal(nil, req)
		if err != nil {
			return notRun(&Error{Code: InvalidArgument, Msg: fmt.Sprintf("call %q: encode the request: %v", m.name, err), Cause: err})
		}
		data, err := c.callHedged(ctx, &p, b, nil, &m)
		if err != nil {
			return err
		}
		if err := respCodec.Unmarshal(data, resp); err != nil {
			return &Error{Code: Internal, Msg: fmt.Sprintf("call %q: decode the response: %v", m.name, err), Cause: err}
		}
		return nil
	}
	for {
		a, err := p.next(ctx)
		if err != nil {
			return err
		}
		err = a.fs.s.invoke(ctx, m, req, resp, reqCodec, respCodec)
		p.record(a, err)
		if err == nil || !p.retry(ctx, err) {
			return err
		}
	}
}

// NewStream opens a stream to method on one replica, which the stream
// keeps; an opening that never ran there is tried on another.
func (c *Client) NewStream(ctx context.Context, method string, opts ...StreamOption) (ClientStream, error) {
	var p placement
	p.init(c, ctx, method)
	for {
		a, err := p.next(ctx)
		if err != nil {
			return nil, err
		}
		st, err := a.fs.s.NewStream(ctx, method, opts...)
		p.record(a, err)
		if err == nil {
			return st, nil
		}
		if !NotExecuted(err) || !p.retry(ctx, err) {
			return nil, err
		}
	}
}
