package balancer

import (
	"math"
	"slices"
	"time"
)

// goneEjection is the ejection state of a replica that left the set, kept
// by Addr for MaxEjection after it left.
type goneEjection struct {
	e         *ejection
	out       bool      // it was ejected or probing when it left
	removedAt time.Time // as of the detector's clock
}

// SetReplicas gives the detector the client's current replicas (all of
// them, ejected or not; listed twice counts once). A replica that left
// has its failure count forgotten; if it had been ejected, its ejection
// state is kept by Addr for MaxEjection (to within a Sweep), so that one
// back within that time (the same Replica or a new one with its Addr) is
// still ejected until its backoff has passed and a probe succeeds, and
// is ejected for longer next time: a resolver flap does not reset it.
// SetReplicas then re-applies the cap on the new set, returning the
// replicas soonest due to a probe to Serving until at most
// MaxEjectedFraction of them (and never all) are out. After it the client
// passes the replicas whose Status is Serving to its balancer.
func (o *Outlier) SetReplicas(all []*Replica) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pruneGone(o.clock)
	next := make([]*Replica, 0, len(all))
	in := make(map[*Replica]bool, len(all))
	for _, r := range all {
		if !in[r] {
			in[r] = true
			next = append(next, r)
		}
	}
	for _, r := range o.replicas {
		if !in[r] {
			o.forget(r)
		}
	}
	was := make(map[*Replica]bool, len(o.replicas))
	for _, r := range o.replicas {
		was[r] = true
	}
	for _, r := range next {
		if !was[r] {
			o.welcome(r)
		}
	}
	o.replicas = next
	o.applyCap()
	o.updateNextProbe()
}

// forget drops r, which left the set (o.mu held).
func (o *Outlier) forget(r *Replica) {
	r.State.failures.Store(0)
	e := o.state[r]
	if e == nil {
		return
	}
	st := o.Status(r)
	o.gone[r.Addr] = goneEjection{e: e, out: st != Serving, removedAt: o.clock}
	delete(o.state, r)
	r.State.status.Store(int32(Serving))
}

// welcome takes in r, new to the set, with the ejection state its Addr
// left behind, if any (o.mu held). A probe outstanding when it left is
// given up: it is due for another once its backoff has passed.
func (o *Outlier) welcome(r *Replica) {
	g, ok := o.gone[r.Addr]
	if !ok {
		r.State.failures.Store(0)
		r.State.status.Store(int32(Serving))
		return
	}
	delete(o.gone, r.Addr)
	o.state[r] = g.e
	if g.out {
		r.State.status.Store(int32(Ejected))
	}
}

// pruneGone forgets the ejection state of replicas gone for MaxEjection
// (o.mu held).
func (o *Outlier) pruneGone(now time.Time) {
	for addr, g := range o.gone {
		if now.Sub(g.removedAt) >= o.cfg.MaxEjection {
			delete(o.gone, addr)
		}
	}
}

// maxOut is how many replicas may be out at once: MaxEjectedFraction of
// them, rounded down, and fewer than all (o.mu held).
func (o *Outlier) maxOut() int {
	n := len(o.replicas)
	return max(0, min(int(o.cfg.MaxEjectedFraction*float64(n)), n-1))
}

// countOut is how many replicas are ejected or probing (o.mu held).
func (o *Outlier) countOut() int {
	out := 0
	for _, r := range o.replicas {
		if o.Status(r) != Serving {
			out++
		}
	}
	return out
}

// applyCap returns replicas to Serving, those soonest due to a probe
// first (a probing one was due already), until no more than maxOut are
// out (o.mu held). They keep their ejection count, so the next ejection
// is longer, and are judged afresh as after a probe.
func (o *Outlier) applyCap() {
	excess := o.countOut() - o.maxOut()
	if excess <= 0 {
		return
	}
	var out []*Replica
	for _, r := range o.replicas {
		if o.Status(r) != Serving {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Replica) int { return o.state[a].until.Compare(o.state[b].until) })
	for _, r := range out[:excess] {
		r.State.failures.Store(0)
		r.State.resetLatency()
		r.State.status.Store(int32(Serving))
		o.state[r].returnedAt = o.clock
	}
}

// updateNextProbe stores when the first ejected replica is due (o.mu
// held).
func (o *Outlier) updateNextProbe() {
	next := int64(math.MaxInt64)
	for r, e := range o.state {
		if o.Status(r) == Ejected {
			// Sub saturates; MaxInt64 itself means "none ejected".
			next = min(next, int64(e.until.Sub(o.epoch)), math.MaxInt64-1)
		}
	}
	o.nextProbe.Store(next)
}
