package erpc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc/balancer"
	"github.com/erpc-go/erpc/resolver"
)

// Client makes calls over a fleet: every replica behind one target, as a
// resolver reports them ("dns:///db.internal:31850",
// "static:///10.0.0.1:31850,10.0.0.2:31850", or a plain "host:port"). It
// keeps one Session per live replica, follows the resolver's updates
// (dialing new replicas in the background, letting removed ones finish
// their calls and streams before closing them, as an aged session does
// under WithMaxSessionAge), and places each call on one replica
// with its balancer. It has a Session's call API (Call, Go, NewStream, and
// Invoke and generated clients take it: both are a Conn). It is safe for
// concurrent use.
//
// A call that provably never ran (NotExecuted: the replica refused it,
// was draining, or lost its session before the call reached it) is tried
// again on another replica, up to MaxAttempts replicas (default 3). Other
// failures are repeated only for methods marked Idempotent
// (WithMethodPolicy), under a retry budget of a tenth of the calls. A
// replica whose calls keep failing is ejected for a while that grows
// with each ejection, then let back in. A server that shuts down
// (Endpoint.Shutdown) tells its clients at once, and they send it no new
// call from then on.
type Client struct {
	ep       *Endpoint
	ownsEP   bool
	target   string
	opts     fleetOptions
	bal      balancer.Balancer
	res      resolver.Resolver
	budget   *balancer.RetryBudget
	limiter  *balancer.ConnectLimiter
	outlier  *balancer.Outlier
	ready    atomic.Pointer[readySet] // the replicas that take new calls
	closed   atomic.Bool
	wake     chan struct{} // kicks the control goroutine
	stop     chan struct{} // closed by Close
	stopped  chan struct{} // closed when the control goroutine has left
	dialsOut sync.WaitGroup
	kickFn   func() // c.kick, which its sessions call on news (Session.watch)

	mu        sync.Mutex // the control state below
	replicas  map[string]*replica
	resErr    error         // the resolver's last error, if its last word was one
	lastSweep time.Time     // the outlier detector's last latency check
	dialErr   error         // the last dial's error
	dialNews  chan struct{} // closed, and replaced, when a dial fails (client_dialfail.go)
	tlsName   string        // the target's host name, for replicas known by IP (tlsNameFor)
}

// readySet is a snapshot of the replicas that take new calls, replaced
// whole when it changes, read without a lock by every call.
type readySet struct {
	list  []*replica
	byBal map[*balancer.Replica]*replica // the ready ones
	all   map[*balancer.Replica]*replica // every replica (for probes)
	some  chan struct{}                  // closed if list is not empty; else closed when a later set has some
}

// ReplicaState is where a Client's replica stands.
type ReplicaState int32

// Replica states.
const (
	// ReplicaConnecting: no session yet, or its last one failed and a
	// new one is being dialed (with backoff).
	ReplicaConnecting ReplicaState = iota
	// ReplicaReady: it takes new calls.
	ReplicaReady
	// ReplicaEjected: its calls kept failing; it takes none until its
	// ejection ends.
	ReplicaEjected
	// ReplicaDraining: its server is shutting down, or the resolver no
	// longer lists it: its calls and streams in flight finish, it takes
	// no new ones. Once a drained server's session has ended and a redial
	// fails (the server is gone), the replica is connecting again.
	ReplicaDraining
)

func (s ReplicaState) String() string {
	switch s {
	case ReplicaConnecting:
		return "connecting"
	case ReplicaReady:
		return "ready"
	case ReplicaEjected:
		return "ejected"
	case ReplicaDraining:
		return "draining"
	}
	return fmt.Sprintf("ReplicaState(%d)", int32(s))
}

// ReplicaInfo is one replica as Client.Replicas reports it.
type ReplicaInfo struct {
	Addr     string // as the resolver reported it
	State    ReplicaState
	InFlight int64  // calls placed on it and not yet ended
	Calls    uint64 // call attempts placed on it
	Failures uint64 // of which failed (refusals that never ran included)
	Latency  time.Duration
}

// NewClient opens an endpoint (of the transport the target's addresses
// use: UDP unless they are mem:// or shm:// ones) and a Client over it.
// opt are the endpoint's options and the Client's own (WithBalancer,
// WithConnectRate, WithMaxSessionAge, WithMethodPolicy). It returns at
// once: replicas are dialed in the background, and calls wait for the
// first to be ready (at most a failure timeout, or their context).
// Close closes the endpoint too.
//
// A target that can never work fails here with InvalidArgument: an entry
// of a plain or static:/// target without a host or a port from 1 to
// 65535 (decimal, or a service name the system knows for UDP, as Dial
// reads it), a literal address the plaintext policy refuses (WithTLS;
// plain, udp://, static:/// or dns:///10.1.2.3:port alike), a
// tcp:// target (a Client's replicas are UDP, mem:// or shm://; erpc.Dial
// takes tcp://), a URL, or a scheme no resolver serves. A call fails at
// once, with the dials' code (InvalidArgument, Unauthenticated,
// PermissionDenied) and the last one's reason, when every replica's last
// dial failed in a way retrying will not fix; when they fail for now
// (nothing answers), with Unavailable and the last dial's reason after
// the failure timeout.
func NewClient(target string, opt ...Option) (*Client, error) {
	if e := clientTargetError(target); e != nil {
		return nil, e
	}
	t, err := resolver.Parse(target)
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("new client %q: %v", target, err), Cause: err}
	}
	local := "udp://:0"
	for _, s := range []string{"mem", "shm"} {
		if strings.HasPrefix(t.Endpoint, s+"://") || strings.Contains(t.Endpoint, ","+s+"://") {
			local = s + "://"
		}
	}
	ep, err := Listen(local, opt...)
	if err != nil {
		return nil, err
	}
	c, err := ep.NewClient(target, opt...)
	if err != nil {
		ep.Close()
		return nil, err
	}
	c.ownsEP = true
	return c, nil
}

// NewClient makes a Client over this endpoint, as the package-level
// NewClient does; of opt, only the Client's options count. Closing the
// Client leaves the endpoint open.
func (ep *Endpoint) NewClient(target string, opt ...Option) (*Client, error) {
	var o options
	for _, f := range opt {
		f(&o)
	}
	fo := o.fleet
	if err := fo.check(); err != nil {
		e := err.(*Error)
		e.Msg = fmt.Sprintf("new client %q: %s", target, e.Msg)
		return nil, e
	}
	for m, p := range fo.policies {
		if p.Hedge > 0 && !p.Idempotent {
			return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf(
				"new client %q: method %q is hedged but not Idempotent: a hedged call may run twice", target, m)}
		}
	}
	if e := clientTargetError(target); e != nil {
		return nil, e
	}
	t, err := resolver.Parse(target)
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("new client %q: %v", target, err), Cause: err}
	}
	if e := ep.checkClientEntries(target, t); e != nil {
		return nil, e
	}
	if fo.connectRate == 0 {
		fo.connectRate = defaultConnectRate
	}
	c := &Client{ep: ep, target: target, opts: fo, bal: fo.balancer, replicas: map[string]*replica{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
		dialNews: make(chan struct{}), tlsName: targetName(t)}
	c.kickFn = c.kick
	if c.bal == nil {
		c.bal = balancer.P2C()
	}
	c.budget = balancer.NewRetryBudget(retryBudgetConfig)
	c.limiter = balancer.NewConnectLimiter(fo.connectRate, connectBurst(fo.connectRate))
	c.outlier = balancer.NewOutlier(outlierConfig)
	c.ready.Store(&readySet{some: make(chan struct{})})
	res, err := buildResolver(target, (*clientWatcher)(c))
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("new client %q: %v", target, err), Cause: err}
	}
	c.mu.Lock()
	c.res = res
	c.mu.Unlock()
	go c.control()
	return c, nil
}

// Target is what the Client was made with.
func (c *Client) Target() string { return c.target }

// Endpoint is the endpoint the Client's sessions belong to.
func (c *Client) Endpoint() *Endpoint { return c.ep }

// Close stops the resolver and closes every session (their pending
// calls fail with Unavailable), and the endpoint if NewClient opened it.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.stop)
	<-c.stopped
	c.mu.Lock()
	res := c.res
	c.mu.Unlock()
	if res != nil {
		res.Close()
	}
	c.dialsOut.Wait()
	c.mu.Lock()
	var sessions []*Session
	for _, r := range c.replicas {
		sessions = append(sessions, r.sessions()...)
	}
	c.replicas = map[string]*replica{}
	c.mu.Unlock()
	c.publish()
	for _, s := range sessions {
		s.Close()
	}
	if c.ownsEP {
		return c.ep.Close()
	}
	return nil
}

// Replicas reports every replica the Client knows, in no set order.
func (c *Client) Replicas() []ReplicaInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ReplicaInfo, 0, len(c.replicas))
	for _, r := range c.replicas {
		out = append(out, r.info())
	}
	return out
}

// kick wakes the control goroutine.
func (c *Client) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// waitReady returns the ready set once it has a replica, or an error
// (NotExecuted: no call was made) when ctx ends, the Client closes, or
// none is ready within the endpoint's failure timeout.
func (c *Client) waitReady(ctx context.Context, method string) (*readySet, error) {
	rs := c.ready.Load()
	if len(rs.list) > 0 {
		return rs, nil
	}
	if c.ep.blockingRefused() { // the loop could not wait for its own dials
		return nil, notRun(errOnLoop("a Client call with no replica ready", "use Client.Go there, or call from another goroutine"))
	}
	t := time.NewTimer(c.ep.failureTimeout())
	defer t.Stop()
	for {
		if c.closed.Load() {
			return nil, notRun(&Error{Code: Unavailable, Msg: fmt.Sprintf("call %q to %s: client closed", method, c.target)})
		}
		news, refused := c.dialWatch(method)
		if refused != nil { // every replica's dial failed for good: no use waiting
			return nil, notRun(refused)
		}
		select {
		case <-rs.some:
		case <-news:
		case <-ctx.Done():
			e := contextError(ctx)
			e.Msg = fmt.Sprintf("call %q to %s: %s while waiting for a ready replica", method, c.target, e.Msg)
			return nil, notRun(e)
		case <-t.C:
			c.awaitDialReason(ctx)
			if rs = c.ready.Load(); len(rs.list) > 0 {
				return rs, nil
			}
			return nil, notRun(c.noReplicaError(method))
		case <-c.stop:
		}
		if rs = c.ready.Load(); len(rs.list) > 0 {
			return rs, nil
		}
	}
}

// noReplicaError says why no replica takes calls.
func (c *Client) noReplicaError(method string) *Error {
	c.mu.Lock()
	n, resErr, dialErr := len(c.replicas), c.resErr, c.dialErr
	dialing := 0
	for _, r := range c.replicas {
		if r.dialing {
			dialing++
		}
	}
	c.mu.Unlock()
	msg := fmt.Sprintf("call %q to %s: no ready replica of %d known", method, c.target, n)
	if dialErr == nil && resErr == nil && dialing > 0 {
		msg += fmt.Sprintf(": %d dials under way, none answered yet", dialing)
	}
	var cause error
	switch {
	case resErr != nil:
		msg += ": resolver: " + resErr.Error()
		cause = resErr
	case dialErr != nil:
		msg += ": last dial: " + dialErr.Error()
		cause = dialErr
	}
	return &Error{Code: Unavailable, Msg: msg, Cause: cause}
}

// failureTimeout is the endpoint's (WithFailureTimeout), or the engine's
// default.
func (ep *Endpoint) failureTimeout() time.Duration {
	if d := ep.opts.engine.FailureTimeout; d > 0 {
		return d
	}
	return 2 * time.Second
}
