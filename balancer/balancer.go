package balancer

import "time"

// Replica is one server address the fleet client holds a session to.
// The client creates one per address; its identity is the pointer, and
// its counters are the client's, updated atomically by the calls.
type Replica struct {
	Addr   string // as the resolver reported it
	Weight uint32 // relative share (0 counts as 1)
	Zone   string

	// State is shared with the balancer and the outlier detector; the
	// client allocates it with the replica. Balancers read it lock-free.
	State ReplicaStats
}

// PickInfo is what a balancer knows of the call it places.
type PickInfo struct {
	Method string
	// Key is the call's affinity key (erpc.WithHashKey); HasKey is false
	// for calls without one, which a hashing balancer spreads at random.
	Key    string
	HasKey bool
	// Start is when the call's attempt began (the client sets it; zero
	// from a caller that does not): Done's DoneInfo.Start is the same, so
	// a balancer can tell the attempt it placed from calls begun before.
	Start time.Time
}

// DoneInfo is how a call placed on a replica ended.
type DoneInfo struct {
	Latency time.Duration
	Start   time.Time // the attempt's PickInfo.Start
	Err     error     // nil on success
	// NeverRan is true when the failure provably never ran a handler
	// (erpc.NotExecuted): it says nothing of the replica's speed.
	NeverRan bool
}

// Balancer places calls on replicas. Update is called by the client, one
// call at a time; Pick and Done are called by any number of goroutines at
// once, concurrently with Update, and must not block or take a lock that
// Update holds long: a pick is on every call's path.
type Balancer interface {
	// Update replaces the replicas that may take new calls: those ready,
	// not ejected and not draining. The slice is the balancer's to keep.
	Update(ready []*Replica)
	// Pick chooses a replica for one call; nil when none may take it.
	// The client counts the call in r.State.InFlight before it starts
	// and reports its end with Done.
	Pick(info PickInfo) *Replica
	// Done reports a call's end on r (after the client has decremented
	// r.State.InFlight). The built-in balancers record the call's latency
	// in r.State here (the client does not): a call that never ran is not
	// recorded, and a failed one counts as at least twice r's average.
	Done(r *Replica, d DoneInfo)
}
