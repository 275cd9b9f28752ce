package rawkv

import (
	"time"

	"github.com/erpc-go/erpc"
)

// Config configures one replica.
type Config struct {
	// ID is the replica's raft ID, 1..len(Peers).
	ID uint64
	// Peers are the erpc addresses of all replicas, Peers[i] for ID i+1,
	// this one's included. They serve raft messages and clients alike.
	Peers []string
	// Endpoint is the replica's endpoint, open on Peers[ID-1]: the one
	// that Listen of the server given to Register opened. Close closes it.
	Endpoint *erpc.Endpoint
	// Service is what Register added to that server; the replica serves
	// its methods once it is started.
	Service *Service
	// TickInterval is the time between raft ticks (default 10 ms).
	TickInterval time.Duration
	// ElectionTick and HeartbeatTick are raft's timeouts in ticks
	// (defaults 10 and 1, the ratio etcd recommends).
	ElectionTick, HeartbeatTick int
	// SnapshotEvery is how many applied entries pass between snapshots,
	// after which the log is compacted (default 10000).
	SnapshotEvery uint64
	// SnapshotKeep is how many entries before a snapshot stay in the log
	// for followers a little behind (default 1000).
	SnapshotKeep uint64
	// MaxInflight bounds the message batches in flight to one peer;
	// further messages to it are dropped, which raft recovers from
	// (default 64).
	MaxInflight int
	// Drop, if set, is asked before every message from one replica to
	// another and drops it when it says so (tests build partitions on it).
	// It is called on the event loop and must not block.
	Drop func(from, to uint64) bool
}

func (c *Config) defaults() {
	if c.TickInterval <= 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.ElectionTick <= 0 {
		c.ElectionTick = 10
	}
	if c.HeartbeatTick <= 0 {
		c.HeartbeatTick = 1
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 10000
	}
	if c.SnapshotKeep == 0 {
		c.SnapshotKeep = 1000
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 64
	}
}
