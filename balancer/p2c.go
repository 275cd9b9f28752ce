package balancer

import (
	"math"
	"sync/atomic"
)

// A replica that is not picked gets no latency sample, so its average
// goes stale: one slow spell, or one unlucky sample, would keep it out
// for good, even when it is as fast as the others (one call in flight at
// a time gives no load signal to correct it). P2C therefore discounts a
// replica's average for the picks it has sat out, and treats averages
// that differ by sampling noise as alike.
//
// idleHalfLife: a replica's average, as P2C judges it, halves for every
// idleHalfLife picks since P2C last picked it (scaled by its weight over
// the mean weight, so weights keep their shares). A replica whose cost
// looks s times its partners' is retried after about
// idleHalfLife·log2(s/alikeRatio) picks, so one that stays s times
// dearer serves about 1/(idleHalfLife·log2(s/alikeRatio)) of the calls.
// One call at a time, s is the latency ratio: 10× slower, about 1 call
// in 384 (0.26 %), which keeps it out of the p99; 2× slower, about 1 in
// 87. Under load the fast replicas' calls in flight shrink s: a 10×
// replica of four at ~1 call in flight each served up to 0.65 % (0.31 %
// before this discount; p99 unchanged). With two replicas under load,
// s shrinks further (a fast replica with ten calls queued costs as much
// as an idle 10× one): the review measured a 10× replica serving
// 1.7-2.1 % at 2-25 calls in flight each (1.1 % before this discount),
// in the p99 then, as plain P2C puts it there too. A replica of weight
// w over the mean is retried w times as often: a 10× replica of weight
// 5 or more served 0.56-0.78 % one call at a time. Counting in picks rather than
// wall time makes that bound hold at any call rate, and keeps the
// package free of clock reads. Smaller values retry sooner but let a slow replica into
// the p99 (at 64, a 10× replica served 1.1 % of an open-loop fleet's
// calls and TestSlowScenarioP99 failed).
const idleHalfLife = 128

// alikeRatio: two replicas whose discounted averages are within this
// factor of each other count as equally fast, and the one with fewer
// calls in flight (then the one idle longer) wins. An average over a few
// samples of an equal replica is easily 10-25 % off; comparing such
// averages strictly left one of two equal replicas (latency ±50 %) as
// little as 10 % of 200 sequential calls. So P2C prefers a faster
// replica only when it is more than 25 % faster.
const alikeRatio = 1.25

// P2C returns the default balancer: power of two choices. Each pick draws
// two distinct replicas at random, with probability proportional to their
// weight, and takes the one expected to answer sooner:
//   - each replica's latency average is discounted, halving for every 128
//     picks since P2C last picked it (scaled by its weight over the mean
//     weight); a replica without a sample is judged as fast as the one it
//     is drawn against, so a new replica takes load at once;
//   - if the discounted averages are within 25 % of each other, the
//     replica with fewer calls in flight wins, then the one idle longer;
//   - otherwise the lower (calls in flight + 1) × discounted average wins.
//
// So equal replicas share the load even one call at a time, a replica
// that looked s times dearer (one slow spell) is retried within about
// 128·log2(s/1.25) picks, and one that stays s times dearer gets about
// 1/(128·log2(s/1.25)) of the calls (10× slower, one call at a time:
// 0.26 %). A replica picked
// although its undiscounted cost was over 1.25 times its partner's has its
// average restarted by the sample of the first call begun with that pick
// or since (DoneInfo.Start against PickInfo.Start: a straggler of the
// slow spell does not count), so one call shows that it recovered (a
// failure still counts as twice the old average). Pick and
// Done take no lock, read no clock and do not allocate.
func P2C() Balancer { return &p2c{} }

type p2c struct {
	set atomic.Pointer[replicaSet]
	_   [56]byte // picks, written by every Pick, on a cache line of its own
	// picks counts the picks made: the clock idle spells are measured by.
	picks atomic.Uint64
}

func (p *p2c) Update(ready []*Replica) { p.set.Store(newReplicaSet(ready)) }

func (p *p2c) Pick(info PickInfo) *Replica {
	s := p.set.Load()
	if s == nil || len(s.replicas) == 0 {
		return nil
	}
	if len(s.replicas) == 1 {
		return s.replicas[0]
	}
	now := p.picks.Add(1)
	i, j := s.twoDistinct()
	a, b := s.replicas[i], s.replicas[j]
	idleA, idleB := idleWeighted(a, now), idleWeighted(b, now)
	latA, latB := pairLatencies(a, b)
	loadA, loadB := float64(a.State.InFlight.Load()+1), float64(b.State.InFlight.Load()+1)
	// ratio: A's latency over B's, each discounted for its idle spell
	// (idle × the mean weight's inverse, in half-lives).
	halfLives := float64(len(s.replicas)) / (float64(s.total) * idleHalfLife)
	ratio := latA / latB * pow2((idleB-idleA)*halfLives)
	var takeB bool
	if ratio < alikeRatio && ratio > 1/alikeRatio {
		takeB = loadB < loadA || (loadB == loadA && idleB > idleA)
	} else {
		takeB = loadA*ratio > loadB
	}
	chosen, dearer := a, loadA*latA > alikeRatio*loadB*latB
	if takeB {
		chosen, dearer = b, loadB*latB > alikeRatio*loadA*latA
	}
	st := &chosen.State
	st.lastPick.Store(now)
	if dearer && !st.restartPending.Load() {
		st.restartFrom.Store(info.Start.UnixNano())
		st.restartPending.Store(true)
	}
	return chosen
}

// idleWeighted is how long r has sat out at pick now, times its weight:
// the picks since P2C last picked it, or since its first pick if it
// never did (about forever if another P2C, whose count is ahead, did).
// Over the mean weight, that is in picks of a replica of mean weight, so
// weights keep their shares.
func idleWeighted(r *Replica, now uint64) float64 {
	return float64(now-r.State.lastPick.Load()) * float64(weightOf(r))
}

// pow2 is 2^x to within 0.27 %, continuous and increasing in x (all the
// discount needs): math.Exp2 took a third of a pick's time. Beyond
// ±1000 it is 0 or +Inf, which still orders a pair right.
func pow2(x float64) float64 {
	switch {
	case !(x > -1000): // or NaN
		return 0
	case x > 1000:
		return math.Inf(1)
	}
	k := math.Floor(x)
	f := x - k
	m := 1 + f*(0.6602+0.3398*f) // 2^f on [0, 1), exact at both ends
	// m is in [1, 2): adding k to its exponent field multiplies it by 2^k.
	return math.Float64frombits(math.Float64bits(m) + uint64(int64(k))<<52)
}

// pairLatencies are a's and b's latency averages, a replica without a
// sample judged as fast as its partner (two without one: equal).
func pairLatencies(a, b *Replica) (float64, float64) {
	latA, latB := float64(a.State.Latency()), float64(b.State.Latency())
	switch {
	case latA == 0 && latB == 0:
		return 1, 1
	case latA == 0:
		return latB, latB
	case latB == 0:
		return latA, latA
	}
	return latA, latB
}

// Done records the call's latency in r's average, or restarts the
// average with it when P2C last picked r on the strength of its idle
// discount and the call began with that pick or since.
func (p *p2c) Done(r *Replica, d DoneInfo) {
	lat, ok := sampleOf(r, d)
	if !ok {
		return
	}
	st := &r.State
	// Only a call begun when the retry was picked, or since, restarts the
	// average: a straggler of the slow spell, fast, slow or failed, says
	// nothing of the recovery and is blended as usual, leaving the restart
	// to the retry's own sample (DoneInfo.Start against PickInfo.Start).
	if st.restartPending.Load() && d.Start.UnixNano() >= st.restartFrom.Load() && st.restartPending.CompareAndSwap(true, false) {
		st.restartLatency(lat)
		return
	}
	st.ObserveLatency(lat)
}
