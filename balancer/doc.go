// Package balancer places each call of erpc's fleet client
// (erpc.NewClient) on one of the replicas behind its target. A Balancer
// sees the replicas that may take calls (ready, not ejected, not
// draining), picks one per call lock-free, and learns from each call's
// end. Built in: power of two choices on calls in flight and latency (the
// default), round robin, and consistent hashing on a per-call key. The
// package also holds the fleet client's other policies, each a small
// state machine tested under a fake clock: outlier ejection, reconnect
// backoff with jitter and a connect-rate bound, and the retry budget.
package balancer
