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
// replica's ReplicaStats. Built in:
//   - P2C (the default): power of two choices on (calls in flight + 1) ×
//     latency average, the pair drawn by weight; a replica without a
//     sample costs the others' average, so a new replica takes load at
//     once.
//   - RoundRobin: smooth weighted round robin (nginx's order), one cycle
//     laid out per Update and walked by an atomic counter.
//   - Hash: a consistent-hash ring on PickInfo.Key (160 points per unit
//     of weight); keyless calls spread at random.
//
// The client's other policies:
//   - Outlier: ejects a replica after consecutive failures or for latency
//     far above the others', for a backoff that doubles per ejection, at
//     most half the replicas at once, and lets it back after one
//     successful probe call.
//   - Backoff and ConnectLimiter: reconnect delays with full jitter, and a
//     token bucket bounding the connects a client starts per second.
//   - AgeJitter: a session's lifetime with jitter, so sessions do not age
//     out together.
//   - RetryBudget: retries at most 10 % of calls plus a small floor, over
//     a sliding window.
package balancer
