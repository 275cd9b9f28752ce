// Package balancer places each call of erpc's fleet client
// (erpc.NewClient) on one of the replicas behind its target, and holds
// the client's other per-replica policies. Everything here is pure: no
// I/O, no goroutines, no clock reads (methods that need the time are
// given it), so each policy is tested under a fake clock.
//
// A Balancer sees the replicas that may take calls (ready, not ejected,
// not draining) through Update, which swaps in an immutable snapshot;
// Pick and Done, on every call's path, read it with one atomic load, take
// no lock and allocate nothing. Done records the call's latency in the
// replica's ReplicaStats (negative latencies, from a clock stepped back,
// are ignored; samples and the average are capped at a day). Built in:
//   - P2C (the default): power of two choices on (calls in flight + 1) ×
//     latency average, the pair drawn exactly by weight (the second among
//     the others). A replica's average is discounted by half for every
//     128 picks it sits out (P2C's clock is its count of picks; scaled by
//     the replica's weight over the mean), so a stale one is retried; averages within 25 % of each other count as alike
//     (then fewer calls in flight wins, then the longer idle); a replica
//     without a sample is judged as fast as its partner, so a new replica
//     takes load at once. So equal replicas share the load even one call
//     at a time; a replica that looked s times dearer (a slow spell) is
//     retried within about 128·log2(s/1.25) picks, and that call restarts
//     its average; one that stays 10× slower serves about 1 call in 384
//     one call at a time (a little more under load, where the others'
//     calls in flight make it look less dear).
//   - RoundRobin: smooth weighted round robin (nginx's order), one cycle
//     laid out per Update and walked by an atomic counter.
//   - Hash: a consistent-hash ring on PickInfo.Key (160 points per unit
//     of weight, weights above 64 counting as 64), a replica's points
//     depending on its own address and weight only, so a membership
//     change moves only the keys it must; keyless calls spread at random.
//
// The client's other policies:
//   - Outlier: ejects a replica after consecutive failures or for latency
//     far above the others', for a backoff that doubles per ejection
//     (saturating at its maximum), at most half the replicas at once and
//     never all (re-applied when the set changes), and lets it back after
//     one successful probe call. A replica that leaves the set and comes
//     back within the maximum ejection keeps its ejection state.
//   - Backoff and ConnectLimiter: reconnect delays with full jitter
//     (computed in O(1), saturating, so Max = MaxInt64 means no cap), and
//     a token bucket bounding the connects a client starts per second.
//   - AgeJitter: a session's lifetime with jitter, so sessions do not age
//     out together.
//   - RetryBudget: retries at most 10 % of calls plus a small floor, over
//     a sliding window.
//
// Times are compared with time.Time's Sub and Before, which use the
// monotonic reading when both times carry one (time.Now's do): a
// wall-clock step (NTP, a VM resumed) neither keeps a replica ejected nor
// grants a fresh retry budget, and no time jump wraps an integer. A NaN
// or infinite float setting never lifts a bound: it takes the default
// (the nearest sane value where there is none).
package balancer
