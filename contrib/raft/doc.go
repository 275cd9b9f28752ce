// Package raft is a hashicorp/raft Transport over erpc-go.
//
//	t, err := erpcraft.New("127.0.0.1:7000", erpcraft.Config{})
//	r, err := raft.NewRaft(cfg, fsm, logs, stable, snaps, t)
//
// A raft.ServerAddress is an erpc target ("127.0.0.1:7000", "mem://n1").
// The Transport implements raft.Transport, raft.WithPreVote and
// raft.WithClose. One erpc endpoint (one event loop) serves the peers' RPCs
// and carries this node's calls.
//
// # Sharing the endpoint
//
// New makes an erpc server of its own. To serve other methods on the same
// endpoint (the kvstore replicas serve their client API there), follow
// erpc's order, every handler before serving, in three steps:
//
//	srv := erpc.NewServer()
//	t, err := erpcraft.Register(srv, erpcraft.Config{}) // raft's methods
//	err = srv.Handle("kv.Get", get)                     // the node's own
//	ep, err := srv.Listen("127.0.0.1:7000")
//	err = t.Start(ep)
//	r, err := raft.NewRaft(cfg, fsm, logs, stable, snaps, t)
//
// The server serves raft's methods from its first packet, so a peer's RPC
// may come between Listen and Start: it is answered Unavailable, which raft
// treats as a failed RPC and retries. The transport's own RPCs fail with
// ErrNotStarted until Start. After Start, LocalAddr is Config.Advertise, or
// the endpoint's Target. The endpoint stays the caller's: Close stops the
// transport (its methods answer Unavailable from then on) and leaves the
// endpoint open. A method the node serves that needs the raft node, which
// comes only after Start, can find it through an atomic pointer and answer
// Unavailable until it is set (as kvstore.Service does).
//
// # Server side
//
// Every RPC method is a HandleRaw handler that runs inline on the event loop
// and never blocks: it copies the request once, decodes it (the structs
// alias the copy, which raft may keep), hands it to raft and returns,
// keeping the erpc.Request handle; the answer is sent later from another
// goroutine, which erpc allows.
//
// Order: the handlers that hand requests to raft are erpc.OnLoop, never
// handed off, so raft gets one session's requests in the order erpc
// delivers them, which is the order they were sent in as long as no packet
// is lost. (An ordinary inline handler that runs past erpc's handoff
// threshold, as one the scheduler preempts on a loaded machine can,
// finishes off the loop while the loop's next handlers run, and its request
// would reach raft after theirs.) A lost request arrives, retransmitted,
// after the ones sent behind it; raft rejects an AppendEntries whose
// previous entry it lacks, and the leader sends again from there.
//
//   - AppendEntries, RequestVote, RequestPreVote and TimeoutNow go to
//     Consumer(). raft's main loop handles RPCs one at a time and answers
//     each before taking the next, so one responder goroutine waits on the
//     answers in queue order (rather than a goroutine per request). The
//     queue is bounded (Config.QueueDepth); when it is full the request is
//     refused with ResourceExhausted, which raft treats as a failed RPC.
//   - Heartbeats have a method of their own. When raft has installed its
//     heartbeat handler (SetHeartbeatHandler), a dedicated goroutine runs
//     it, so a heartbeat never waits behind the main loop or a follower's
//     disk; without it they take the normal path.
//   - InstallSnapshot arrives as a stream of chunk calls (snapshot.go). The
//     first chunk starts the RPC with an io.Reader that yields the chunks'
//     bytes straight from erpc's buffers; a chunk is answered only once raft
//     has read it, which is the flow control.
//
// # Client side
//
// Each peer gets up to three erpc sessions, dialed on first use: bulk
// (AppendEntries, votes, TimeoutNow), heartbeat (so heartbeats never queue
// in the bulk session's window behind large AppendEntries) and snapshot. A
// heartbeat is recognised by raft's shape for it (a term and a leader,
// nothing else) and gets its own, shorter timeout (Config.HeartbeatTimeout).
// A session whose call fails with Unavailable or DeadlineExceeded is
// dropped and the next RPC dials again, which also finds a peer that came
// back elsewhere under the same name.
//
// AppendEntriesPipeline sends with Session.Go; erpc completes calls in any
// order, so sent futures wait in a FIFO whose capacity is the pipeline
// depth (Config.MaxInFlight, default 4; 1 disables pipelining) and one
// goroutine hands them to Consumer() in send order. A future with no answer
// after Config.Timeout fails, so raft's replication goroutine, which may be
// blocked sending the next entry, always moves on.
//
// InstallSnapshot sends Config.SnapshotChunkSize chunks (1 MiB) one at a
// time, within Timeout * (1 + Size/SnapshotBytesPerTimeout) in all; the
// server waits at most Timeout for each next chunk. raft may answer before
// reading everything (a stale term); the client then stops early.
//
// # Encoding
//
// Hand-written binary (codec.go): uvarints, length-prefixed byte strings
// that keep nil apart from empty, a presence byte for optional parts. Log
// times travel as Unix nanoseconds, without the monotonic reading or the
// location. Every field of every request and response is carried, which
// the round-trip tests check with reflect.DeepEqual.
//
// # Faults, for tests
//
// Config.Drop is asked before every outgoing RPC and fails it at once with
// ErrDropped when it says so. The cluster tests build partitions on it
// (kvstore.Faults). Packet loss, which erpc recovers from by
// retransmission, comes from erpc's internal fault injection
// (internal/faults: a transport that drops datagrams, given to the
// endpoint with erpc.WithTransport; kvstore.ClusterConfig.PacketLoss).
//
// # Notes
//
// Give the replicas' endpoints a spin longer than raft's commit path, the
// same for every endpoint of a process, such as
// erpc.WithSpin(time.Millisecond). A short spin ends just before the
// replies come, so every hop pays for waking a parked thread as well; and
// where the spinning loops keep every processor busy, a parked endpoint's
// packets wait until they stop (see erpc.WithSpin). Measured with three
// replicas sharing one core (erpc-bench raft), a replicated PUT took
// 155-189 µs at the median with a fixed 1 ms spin, 165-171 µs with erpc's
// adaptive default (with a longer tail), about 420 µs with a fixed 50 µs
// and about 990 µs with none.
// # See also
//
// Package rawkv (contrib/raft/rawkv) is the other way to run Raft over
// erpc, eRPC's own: etcd's raft RawNode driven from each replica's event
// loop, with no raft goroutines, so a replicated PUT is loop to network to
// loop. erpc-bench raft -vs raft-tcp,etcd-rawnode measures both.
package raft
