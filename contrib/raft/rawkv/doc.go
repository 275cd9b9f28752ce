// Package rawkv is a replicated in-memory key-value store driven the way
// eRPC drove Raft (Kalia et al., NSDI 2019): etcd's raft
// state machine (go.etcd.io/raft/v3 RawNode) lives on each replica's erpc
// event loop, and nothing else touches it. There are no raft goroutines.
//
//	c, err := rawkv.StartCluster(rawkv.ClusterConfig{
//		EndpointOptions: []erpc.Option{erpc.WithSpin(time.Millisecond)},
//	})
//	cl, err := rawkv.NewClient(0, "127.0.0.1:0", c.Addrs())
//	err = cl.Put(ctx, key, value)
//
// # Design
//
// A replica is one erpc endpoint and one RawNode with raft.MemoryStorage,
// a map and a table of client sessions. Its methods are registered on the
// endpoint's server before the server serves (Register, which returns a
// Service); StartReplica, given the endpoint that the server's Listen
// opened, dials the other replicas and attaches the replica to the
// Service, which answers Unavailable until then (StartCluster does all
// of it). The endpoint's loop goroutine runs every function that touches
// the RawNode, the map or the sessions:
//
//   - the "rawkv.raft.msg" handler (inline, foreground) steps a batch of
//     raft messages from another replica;
//   - the "rawkv.kv.put" and "rawkv.kv.get" handlers (inline) propose a
//     client's command on the leader and keep its Request; other replicas
//     answer with a redirect to the leader's address;
//   - the continuations of the replica's own Session.Go calls step the
//     messages that come back;
//   - a tick, which a time.Ticker goroutine hands to the loop with
//     Endpoint.Post every TickInterval (10 ms; ElectionTick 10 and
//     HeartbeatTick 1, the ratio etcd recommends, so elections take
//     100-200 ms), and Replica.Propose and Dump, also through Post.
//
// Each of them ends by handling every Ready the RawNode has, in the order
// raft asks for: the snapshot, hard state and entries are written to the
// MemoryStorage first, then committed entries are applied to the map
// (answering the request that waits for each, with a deferred
// Request.Respond), then the messages are sent, then Advance. Raft's rule
// that nothing may be sent before the state it depends on is persisted
// holds trivially: "persisting" is an append to memory on the same
// goroutine, done before the send is even started. (A disk-backed
// storage would have to fsync there, on the loop, or move to raft's
// AsyncStorageWrites with the write on a goroutine and its responses
// posted back.) Applying before sending is allowed because committed
// entries are already durable on a majority; it lets the client's answer
// go out ahead of the followers' commit notices.
//
// So a PUT is loop to network to loop, with no goroutine hand-off: the
// client's request runs the leader's handler, which proposes, appends, and
// sends one erpc call (MsgApp) to each follower; a follower's handler
// steps it, appends, and puts its MsgAppResp in that call's response; the
// response's continuation, on the leader's loop, steps it, which commits
// the entry (the leader and one follower make a majority of three); the
// leader applies it and responds to the client. Four network hops, and the
// replication round trip is one erpc call.
//
// Messages to the same replica from one Ready travel as one call (a batch
// of length-prefixed protobuf messages), and the messages a handler
// produces for the replica it is serving go back in that call's response.
// Other messages (heartbeats, votes, commit notices) are calls whose
// response is empty. A call that fails is reported to raft
// (ReportUnreachable, and ReportSnapshot for a snapshot); raft resends.
// At most MaxInflight batches go to one peer at a time: beyond that,
// messages are dropped rather than queued behind a peer that is gone.
//
// # Clients and sessions
//
// A command carries (client ID, sequence number). A replica applies a
// client's command once: a retry of the last applied one is answered from
// the session table, an older one is refused. A client runs one command
// at a time, so the leader keeps at most one waiting request per client;
// when it loses leadership it answers them with a redirect and the clients
// retry at the new leader. Gets go through the log, which makes them
// linearizable without leases or ReadIndex.
//
// # Snapshots
//
// Every SnapshotEvery applied entries a replica snapshots its map and
// session table into the MemoryStorage and compacts the log, keeping
// SnapshotKeep entries. A follower that falls behind the compaction gets
// the snapshot in a MsgSnap (one erpc call; erpc's default message limit
// is 8 MiB) and restores from it.
//
// # Measured
//
// erpc-bench raft -vs raft-tcp,etcd-rawnode -d 4s (2-vCPU VM; the three
// replicas share CPU 0, the client has CPU 1; every endpoint spins 1 ms):
// a client PUT took 126-142 µs at the median and 1.4-4.2 ms at p99, beside
// 179-196 µs (p99 5.3-6.4 ms) for hashicorp/raft over contrib/raft's erpc
// transport and 399-444 µs (p99 4.8-6.9 ms) over its TCP transport, on
// the same runs. The bare erpc round trip to the leader was 21-25 µs.
//
// Most of the rest is the replicas sharing one core, not raft: a one-replica
// cluster commits a Replica.Propose (Post, propose, Ready, apply, answer)
// in about 6 µs at the median; two replicas take about 60 µs and three
// about 135 µs, while a bare loop-to-loop round trip between two of the
// endpoints is about 27 µs. Each added replica is another loop polling
// its socket on the same core, so a packet waits for the other loops'
// turns. eRPC's 5.5 µs had a machine per replica and kernel bypass.
//
// # Limits
//
// The membership is fixed (no configuration changes are proposed) and
// storage is memory only: a replica that closes does not come back.
// Every endpoint of a process should have the same erpc.WithSpin, longer
// than a replication round trip (1 ms, say), for the reasons given in
// contrib/raft's package documentation.
package rawkv
