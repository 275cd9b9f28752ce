// Package raft is the raft scenario: PUT latency through a three-replica
// key-value store (contrib/raft) whose replicas talk over erpc, beside
// raft-tcp (hashicorp/raft's NetworkTransport over TCP) and etcd-rawnode
// (etcd raft's RawNode on each replica's erpc event loop), the systems
// alternating in rounds. It owns those systems: the cluster process
// (server.go, rawnode.go) and its client (raft.go), and its flags
// (flags.go). It does not use package systems' echo servers.
package raft
