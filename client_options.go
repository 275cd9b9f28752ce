package erpc

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/erpc-go/erpc/balancer"
)

// fleetOptions are the options of a Client (NewClient); an endpoint
// ignores them.
type fleetOptions struct {
	balancer    balancer.Balancer
	connectRate float64       // dials per second, client-wide; 0: defaultConnectRate
	maxAge      time.Duration // 0: sessions never age out
	policies    map[string]MethodPolicy
}

// Defaults of a Client.
const (
	// defaultConnectRate bounds a client's dials per second, so that a
	// fleet restarting at once is not met by every client redialing
	// every replica in the same instant.
	defaultConnectRate = 100
	// defaultMaxAttempts is how many replicas a call that provably never
	// ran may be tried on, the first included.
	defaultMaxAttempts = 3
)

// MethodPolicy says how a Client may repeat calls to one method.
//
// A call that provably never ran (NotExecuted) is always tried again on
// another replica, up to MaxAttempts. Another failure (Unavailable,
// Aborted, ResourceExhausted: not a handler's own answer) is repeated
// only for an Idempotent method, under the client's retry budget, after
// a pause of 10 ms doubling (jittered). Hedge,
// for an Idempotent method only, sends a second copy to another replica
// when the first has not answered after that long; the first answer wins
// and the other copy is canceled. Hedges and retries draw on the same
// retry budget (a tenth of the calls, plus 10 a second): with none left,
// a call is not hedged, so together they add at most that much load.
type MethodPolicy struct {
	Idempotent  bool
	Hedge       time.Duration // 0: no hedging; needs Idempotent
	MaxAttempts int           // replicas a call may be tried on, the first included; 0: 3
}

// WithBalancer makes a Client place its calls with b (default:
// balancer.P2C, power of two choices on calls in flight and latency).
// b must be the Client's own: it keeps the Client's replicas.
func WithBalancer(b balancer.Balancer) Option {
	return func(o *options) { o.fleet.balancer = b }
}

// WithConnectRate bounds how many sessions per second a Client dials,
// over all its replicas (default 100): a fleet that restarts at once is
// redialed at this pace, each replica with exponential backoff and
// jitter besides. Every dial counts, a session's reconnect after its
// server restarted included: a Client's sessions never redial on their
// own, the Client does. 0 is the default; a negative, NaN or infinite
// rate is refused by NewClient (InvalidArgument).
func WithConnectRate(perSecond float64) Option {
	return func(o *options) { o.fleet.connectRate = perSecond }
}

// WithMaxSessionAge makes a Client replace each replica's session after
// about d (jittered by up to a fifth either way, so that a client's
// sessions do not all turn over at once): a long-lived client then
// spreads its calls again over replicas added since, at the cost of one
// handshake per d per replica. The old session stops taking new calls
// and streams once its successor is up, and closes when its calls and
// streams have finished.
// 0, the default, keeps sessions for as long as they work: the balancer
// already moves load to new replicas, which start with no calls in
// flight.
func WithMaxSessionAge(d time.Duration) Option {
	return func(o *options) { o.fleet.maxAge = d }
}

// WithMethodPolicy sets how a Client repeats calls to method (its full
// name, as Call takes it). A Hedge without Idempotent is refused by
// NewClient: a hedged call may run twice.
func WithMethodPolicy(method string, p MethodPolicy) Option {
	return func(o *options) {
		if o.fleet.policies == nil {
			o.fleet.policies = map[string]MethodPolicy{}
		}
		o.fleet.policies[method] = p
	}
}

// check refuses the options out of range, as the endpoint's are
// (options_check.go): zero is the default.
func (fo *fleetOptions) check() error {
	if r := fo.connectRate; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf(
			"WithConnectRate(%v) is out of range: want 0 (the default) or a finite rate above 0", r)}
	}
	if fo.maxAge < 0 {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf(
			"WithMaxSessionAge(%v) is out of range: want 0 (the default) or more, not negative", fo.maxAge)}
	}
	return nil
}

// hashKey is the context key of a call's affinity key.
type hashKey struct{}

// WithHashKey gives a call (Invoke over a Client) an affinity key: a
// hashing balancer (balancer.Hash) sends every call with the same key to
// the same replica while the replicas stay the same. Raw calls
// (Client.Call) take it from their context: ContextWithHashKey.
func WithHashKey(key string) CallOption {
	return func(o *callOptions) { o.hashKey, o.hasHashKey = key, true }
}

// ContextWithHashKey returns ctx carrying a call's affinity key, for
// Client.Call (see WithHashKey).
func ContextWithHashKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, hashKey{}, key)
}
