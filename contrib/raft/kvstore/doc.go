// Package kvstore is a replicated key-value store on hashicorp/raft over
// erpc: the example service of package raft (contrib/raft), run by
// contrib/raft/examples/raftkv and by erpc-bench's raft scenario, and checked for
// linearizability with porcupine under loss, leader isolation and restarts
// (lin_test.go).
//
// It owns the state machine (fsm.go: Put, Get and Append, every one
// through the log, so reads are linearizable without a leader lease, and a
// table of client sessions that applies each (client, sequence number)
// command once however often it is retried), a replica's client API
// (replica.go: MethodDo on the same erpc endpoint as raft's RPCs, answering
// NotLeader with the leader's address), the Client that follows those
// redirects (client.go), and an in-process Cluster over UDP loopback, shm
// or memnet, with raft over erpc or over hashicorp's TCP transport for
// comparison (cluster.go).
package kvstore
