// Package erpc is a fast general-purpose RPC library: eRPC's design
// (Kalia et al., NSDI 2019) in Go, over UDP, shared memory or an in-memory
// network.
//
// # Usage
//
// A server registers handlers on a Server, then serves them on an endpoint;
// nothing is answered before every handler is there:
//
//	srv := erpc.NewServer()
//	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
//		return req, nil
//	})
//	ep, err := srv.Listen("0.0.0.0:31850", erpc.WithTLS(serverTLS))
//	if err != nil { ... }
//	defer ep.Close()
//
// A client dials a session and calls:
//
//	s, err := erpc.Dial(ctx, "10.0.0.1:31850", erpc.WithTLS(clientTLS))
//	if err != nil { ... }
//	defer s.Close()
//	resp, err := s.Call(ctx, "Echo", []byte("hi"), nil)
//
// A session that could leave the host is never plaintext by accident:
// serving on an address other hosts can reach (a wildcard such as
// "0.0.0.0:31850" or ":31850", an interface's address, a name with such
// an address) and dialing an address of another host need WithTLS, or
// Insecure to run plaintext on purpose; without either they fail with
// InvalidArgument naming both. Loopback ("127.0.0.1", "[::1]",
// "localhost"), mem:// and shm:// need neither. A client-only endpoint
// (Listen) accepts no sessions, so only its dials are checked; nor is
// Listen with WithTransport. An endpoint's choice holds for all its
// sessions: a wildcard endpoint with Insecure is plaintext to every peer,
// with WithTLS it is TLS to every peer, loopback ones included.
//
// A target's host may be a name ("db.internal:31850"), looked up with the
// dial's context, whose addresses are tried in turn, or an IPv4 or IPv6
// address ("[fd00::1]:31850"). An endpoint listening on "[::]",
// "0.0.0.0" or ":0" is dual-stack: it serves, and dials, both families.
//
// Typed handlers and calls use generics and a codec chosen by type
// (encoding.BinaryMarshaler, []byte, or protobuf messages with package
// codec/protocodec imported): see Register and Invoke. HandleRaw is the
// zero-copy, zero-allocation form.
//
// # Buffers
//
// Who owns a buffer is settled by the API, not by convention. A handler's
// request is the endpoint's memory, valid until the answer. A response
// may be the request itself, or part of it (the endpoint keeps that
// buffer as the response: an echo costs no copy), memory from
// Request.ResponseBuffer (no copy either), or any other slice, which
// Respond copies before it returns; either way the handler may reuse its
// own memory afterwards. ResponseBuffer gives the request's response
// memory to its first caller only, while the request is unanswered;
// every other call (a second one, another goroutine's, one after the
// answer) gets fresh memory that no answer shares. So when several
// goroutines answer one request, the first answer is sent exactly as it
// was when Respond was called, whatever the others write into their
// buffers, before or after. A caller's request buffer is read until Call
// returns, never after, and its response buffer is reused when large
// enough.
//
// # Concurrency
//
// An Endpoint is one event loop goroutine, which owns all its protocol state
// (eRPC's Rpc). Calls and responses from other goroutines reach it through a
// queue plus one wake-up; a call that user code on the loop starts
// (Session.Go from a continuation, an inline handler or a Post function)
// goes straight into the engine instead, with the turn's other packets
// (on Linux on amd64 and arm64, where the loop tells its own goroutine in
// two instructions; elsewhere it takes the queue too). Handlers run
// inline on the loop by default (the fastest path for short handlers),
// and may block: a handler still running
// after 100 us (WithHandoff) hands the loop to a fresh goroutine, as Go's
// runtime hands a processor away from a goroutine blocked in a system
// call, and finishes as a Background handler. Background handlers run on
// goroutines of their own from the start (WithWorkers gives a fixed pool
// fed by one bounded queue, which refuses requests with ResourceExhausted
// when full). Session.Go continuations run on the loop, which is where an
// inline handler makes nested calls (calls to another server before it
// responds). A blocking call (Call, Dial, Shutdown) made by an inline
// handler hands the loop off first; made by a continuation, Post function
// or OnLoop handler, on the loop itself, it could never complete, so it
// fails at once with FailedPrecondition. One of those that holds the loop
// too long is logged (WithStallLog). A continuation never runs inside the
// Session.Go that started its call: one whose call finds the endpoint
// closed runs on a goroutine of its own. A continuation, Post function or
// StatsHandler method the loop calls (CallBegin and CallEnd of served
// calls, CallEnd of Session.Go calls, SessionEvent) that ends its
// goroutine (runtime.Goexit, as t.FailNow does) ends only that
// goroutine: it is logged once, naming what it was, and the loop goes on
// on a fresh one, as after a handoff, with the rest of its work in order
// (a handler's Goexit is guarded too: see WithHandoff).
// Use several endpoints for several cores.
//
// A Request may be kept and used from any goroutine, for as long as one
// likes, with no data race: until the request is answered its accessors
// return that request's values; from the answer on they return zero
// values (Context a canceled one), even once the endpoint reuses the
// request's memory for another request: for at least 2^48 later requests
// of the endpoint, and then for good (memory whose 48-bit generation would
// wrap is retired).
//
// The loop waits in one of two ways: by default it polls, yielding the
// processor, for a window after its last work, then sleeps in the Go
// netpoller; the window adapts between 50 µs and 1 ms, growing when a sleep
// was cut short by work and shrinking when the endpoint is idle (WithSpin
// fixes it). WithBusyPoll spins on a goroutine locked to its OS thread,
// for the lowest latency at the cost of a core; over UDP it then waits for
// a datagram with receives back to back. Either way the loop does not
// park for a deadline less than a millisecond away (a pacer's gap): Go's
// netpoller sleeps whole milliseconds, so it spins until the deadline.
//
// # Streams
//
// Server.HandleStream serves server-, client- and bidirectional streams;
// Session.NewStream opens one. Each side Sends and Recvs any number of
// messages, of any size up to the message limit. The handler's return
// ends the stream with its status and trailers (SetTrailer); headers go
// with the first message or SendHeader. CloseSend half-closes. Canceling
// the stream's context, or its deadline passing, ends both sides. Each
// direction of each stream has its own credit window (StreamWindow,
// default 16,384 messages and 4 MiB): a slow reader blocks only its own
// stream's sender, and never holds more than its window. Streams travel
// in batches over erpc's own requests on the session (at most four of its
// request slots, however many streams, and always fewer than the session
// window; a session window of 1 refuses streams), so they inherit at-most-once,
// retransmission and congestion control. Stream handlers run on their own
// goroutines. Interceptors: ChainStreamInterceptor and
// WithStreamClientInterceptors.
//
// # Errors
//
// Every failed call returns an *Error with a Code (the gRPC set). A call
// whose context ends returns Canceled or DeadlineExceeded, and errors.Is
// matches context.Canceled or context.DeadlineExceeded; the deadline
// travels to the handler's context. A server that is gone, restarted, or
// closed gives Unavailable within the failure timeout (WithFailureTimeout).
// A full server gives ResourceExhausted at once; a request over the
// session's limit, InvalidArgument with both sizes, the method and the
// target (a handler's response over it, Internal with both sizes and the
// method: the server failed, not the call's arguments); a method the server does not have, Unimplemented with its
// name. A host name that does not exist fails Dial and Listen alike with
// InvalidArgument (a typo, which waiting will not fix); a resolver that
// could not answer, with Unavailable. NotExecuted (errors.Is with
// ErrNotExecuted) tells a failure that provably never ran from one that
// may have (see Delivery). A refusal of one call, by the server or
// locally, leaves its session up for the next. A handler may return gRPC
// status errors (grpc's status.Error): erpc reads any error with a
// GRPCStatus method, without importing gRPC, and answers with its code,
// message and details.
//
// # Delivery
//
// erpc runs a request at most once: retransmissions, duplicates, reordering,
// late packets from a closed session or from a server's earlier incarnation,
// and a client whose address changes mid-call never run a handler twice
// (each end of a session picks a random token; every packet carries its
// destination's; a server moves a session to a client's new address only
// once the client answers a challenge sent there). Such a client's calls
// complete if its address stays put for several round trips at a time (in
// simulation, with a change every four round trips on average, all did;
// every two, 97 %); when it moves faster, calls may fail, but none runs
// twice. A failed call may or may not have run, unless NotExecuted(err)
// says it provably did not: the server refused it before running it (full,
// shutting down, no such method, too large), it was never sent, or its
// session ended before it reached a live server session (the server's reset
// or closing notice proves it; a client believes a reset only if it echoes
// a packet the client has in flight). A Session retries only the last
// kind, once, on a new session; every other failure, and every call that
// may have run, is the caller's to retry or not, and NotExecuted says when
// that is safe. (A Client also sends a call that never ran to another
// replica, and repeats a failure that may have run only for a method its
// caller marked Idempotent: see Many servers.) These promises hold against the network's own behaviour (loss,
// duplication, reordering, NAT rebinding and port reuse) and against
// attackers who cannot read the traffic; see Limitations.
//
// # Many servers
//
// NewClient makes a Client over every replica behind a target that a
// resolver watches (package resolver: "dns:///name:port",
// "static:///a:1,b:2", "host:port"); it has a Session's call API, and
// Invoke and generated clients take either (Conn). It keeps one Session
// per replica, dialed in the background under a client-wide connect rate
// with backoff and jitter, and places each call with a Balancer (package
// balancer; power of two choices by default). A replica whose calls keep
// failing is ejected for a time that grows, and real calls probe it back.
// A server's Shutdown tells its sessions' clients at once (a notice, and
// a mark on every packet it sends from then on: Session.Draining), and a
// Client sends it no new call from then on; what was already on its way
// is refused as never run. A call that never ran goes to another replica
// (MethodPolicy.MaxAttempts, 3 by default); other failures are repeated
// only for Idempotent methods, within a retry budget of a tenth of the
// calls, and hedging (MethodPolicy.Hedge) is for Idempotent methods only
// and draws on the same budget: a call that may have run is never sent
// twice otherwise. A handler's own error answer is neither repeated nor
// held against its replica (ejection). Interceptors and
// the StatsHandler see each attempt, with its replica in CallInfo.Peer.
// A Client's sessions share one endpoint (its loop); the Client adds one
// goroutine of its own, which follows the resolver, dials (a goroutine
// per dial in progress), ejects and ages replicas, while calls pick a
// replica lock-free and allocate nothing in steady state.
//
// # Congestion control, multipath and overload
//
// Each client session keeps a delay-based window (Swift-style, package
// internal/cc): a target delay above the measured base round trip, net of
// the server's handling time, paced when congested and bypassed when not.
// Sessions to a loopback address or over shared memory run on credits
// alone; WithoutCongestionControl turns it off everywhere. WithPaths(k)
// spreads a session's packets over k UDP source ports (SRD's multipath),
// choosing per packet the less queued of two paths.
//
// A server holds a bounded number of requests and bytes; beyond them a
// request is refused at once with ResourceExhausted (NEBULA's fail-fast).
// WithWorkers runs Background handlers on a fixed pool, WithSLO bounds its
// queue by a latency target, and Stats.NacksLastSecond says how much the
// server refuses.
//
// # Interceptors, metadata and observability
//
// ChainUnaryInterceptor (server) and WithUnaryClientInterceptors (endpoint)
// wrap Handle and Register handlers and Call and Invoke calls, as gRPC's
// unary interceptors do. Metadata travels beside a request:
// NewOutgoingContext or AppendToOutgoingContext on the caller's context,
// IncomingMetadata and PeerFromContext in the handler's. PeerAuthFromContext
// (or Request.PeerAuth) is what is known for certain of the caller, for
// interceptors that authorize: its TLS state and SPIFFE ID, or, over
// shm, its process's pid, uid and gid as the kernel gives them;
// Session.PeerAuth is the server's, as the client verified it. A StatsHandler
// (WithStatsHandler) sees every call, the raw path's too, and every
// session; contrib/otel and contrib/prometheus are built on it. Package
// health serves erpc.health.v1, package reflection lets the erpc command
// list and call a server's methods, and protoc-gen-go-erpc generates
// stubs with gRPC's method signatures, so that one implementation serves
// erpc and gRPC clients.
//
// # Platforms
//
// erpc-go needs Go 1.26 or later. Linux is the full platform: UDP with
// batched system calls, GSO and GRO, several paths (WithPaths) and
// busy-poll receives, and shared memory (Linux 5.1 or later). Elsewhere
// (macOS, Windows, the BSDs) UDP runs on package udp's portable path, a
// net.UDPConn read by a goroutine of its own, one datagram per system
// call; Listen with WithPaths above 1 fails there, and an shm:// address
// too, both with FailedPrecondition (a permanent error, not Unavailable),
// matching udp.ErrNotSupported and shm.ErrNotSupported. TCP (tcp://) and
// the in-memory network run everywhere; over TCP the Linux loop reads and
// writes the sockets itself, elsewhere a reader and a writer goroutine per
// connection do.
//
// # Security
//
// WithTLS makes sessions TLS 1.3 sessions: crypto/tls's handshake over
// erpc's datagrams, then every packet, header and payload, encrypted and
// authenticated with the negotiated AEAD, with a replay window and key
// updates; a packet that fails to open is dropped, counted and never
// answered, and a server session takes packets only from the TLS
// association that made it. A failed handshake fails Dial at once with
// Unauthenticated, naming the reason. It does not hide traffic patterns
// (sizes, timing, who talks to whom), nor stand against a compromised
// host (tls_options.go has the details). Without TLS there is no
// encryption or authentication: session tokens travel in clear, so an
// attacker who reads the traffic can read every request and response,
// forge requests, end sessions, and make a handler run twice; so can one
// who has read a session's token and sends from its client's IP (a
// neighbour behind the same NAT). The random tokens stop blind, off-path
// spoofing only (internal/wire's doc, Threat model). A shared-memory peer
// is treated as hostile and known by what the kernel vouches for
// (SO_PEERCRED), never by what it claims.
//
// # Limitations
//
// Messages are at most 8 MiB by default (WithMaxMessageSize). Inline
// handlers run on the event loop; one that runs past 100 µs (WithHandoff)
// gives the loop to a fresh goroutine and finishes off it, which takes up
// to 1-2 ms when the process is otherwise idle (Go's timers). Continuations,
// Post functions and OnLoop handlers are never handed off: one that blocks
// holds every call of its endpoint meanwhile (logged after WithStallLog).
// A Client's drain is exact for clients that hear the server's notice
// within its linger (100 ms without a request, at most 1 s): a request
// sent later, after the server closed, fails as one that may have run
// (the closing notice names the lowest request number the server never
// saw, and a session's slots are numbered apart). The transports are
// UDP, TCP (for networks that drop or throttle UDP: "tcp://host:port",
// package transport/tcp), shared memory and the in-memory network; AF_XDP
// kernel bypass is a transport of its own module (transport/xdp), passed
// with WithTransport.
//
// # Stability
//
// erpc-go is v0: its API and its wire format may change between minor
// versions. The API's shape follows gRPC's and is meant to stay (Server,
// Handle, Register, Listen, Dial, Session.Call, Invoke, the status codes,
// Metadata, interceptors, NotExecuted); options, Stats fields, the
// transport interface and the wire format (internal/wire's version, 2) are
// the likeliest to change. Peers of different wire versions drop each
// other's packets and never connect: both ends must speak the same one.
//
// # Where things are
//
// The root package, by concern:
//
//   - The event loop: loop.go (receive, dispatch, send, timers, park),
//     spin.go (the default mode's adaptive spin window), spin_share.go
//     (spinning that gives way: at most GOMAXPROCS-1 loops of a process
//     spin at once, and a spin whose idle turns come far apart parks), busypoll.go (a
//     busy-polling loop's hold on its thread), watch.go (whether a
//     goroutine is the loop, and the stall log), handoff.go (an inline
//     handler that blocks gives the loop to a fresh goroutine),
//     loopg_linux.go and loopg_other.go (the calling goroutine's
//     identity, for calls started on the loop without the queue:
//     call.go's startOnLoop), goexit.go
//     (a handler, continuation, Post function or StatsHandler method
//     that calls runtime.Goexit), queue.go (the commands
//     other goroutines hand the loop), endpoint.go (Endpoint: Listen,
//     transports by scheme, Post, Close, Shutdown, Stats).
//   - The protocol engine: internal/proto (sans-I/O; its doc says what
//     differs from eRPC), internal/wire (the packet format and the threat
//     model), internal/cc (congestion control and path choice),
//     internal/simnet (the simulated network of the protocol tests).
//   - Sessions and calls: session.go (Session, reconnects), call.go (Call,
//     Go, completions), dial.go (targets and name look-up), dial_each.go
//     (trying a target's addresses in turn), uncongested.go (peers that
//     skip congestion control).
//   - Requests and workers: server.go (Server, registration), handler.go
//     (Handle, HandleRaw, Background; serving a request inline or on a
//     worker), request.go and request_read.go (the Request handle, its
//     answers and its reference-counted reads), context.go (a handler's
//     context), worker.go (the worker pools).
//   - Admission: slo.go (Dispatch, WithSLO); the held-request bounds are
//     the engine's (options.go's WithMaxHeldRequests and WithMaxHeldBytes).
//     memrelease.go: memory the engine's pool gives back after a load
//     ends goes to the operating system within seconds.
//   - Typed API: typed.go and typed_cache.go (Register, Invoke), method.go
//     (method IDs), package codec.
//   - Streams: stream.go (the API: HandleStream, ServerStream,
//     ClientStream, windows), stream_client.go and stream_pump.go (a
//     client's streams and its session's exchanges), stream_server.go,
//     stream_serve.go and stream_hub.go (a server's streams, its side of
//     the internal open and exchange methods, per-session state),
//     stream_turns.go (the streams' turns in a batch, both sides),
//     stream_bounds.go (a server stream's Header and End frames within
//     the session's message limit),
//     stream_icpt.go (stream interceptors); internal/stream (the sans-I/O
//     frames, credit windows and reorder buffer).
//   - Metadata: metadata.go (a request's metadata), respmeta.go (a
//     handler's response headers and trailers), respmeta_call.go (the
//     caller's side of them).
//   - Interceptors and stats: interceptor.go, stats.go
//     (Endpoint.Stats), stats_handler.go (StatsHandler).
//   - Errors: status.go (Code, Error, error payloads), status_grpc.go (a
//     handler's gRPC status error read by reflection, importing neither
//     gRPC nor protobuf), notexecuted.go (NotExecuted, the never-ran
//     proofs).
//   - Options: options.go, options_check.go (the ranges Listen checks).
//   - Security: tls_options.go (WithTLS, Insecure), tls_layer.go (an
//     endpoint's TLS associations: routing protected packets by ID,
//     handshakes, refusals), tls_send.go (sealing what the engine
//     sends), tls_async.go (handshake steps off the loop), tls_admit.go
//     (which first Initials make state; the 3x send budget to an address
//     not yet validated);
//     internal/secure (one association's handshake, sans-I/O),
//     internal/seal (the protected packet format); tls_policy.go (which
//     addresses need WithTLS or Insecure), peerauth.go (PeerAuth: what
//     is known for certain of a session's peer).
//   - Many servers: client.go (Client: NewClient, Replicas, Close),
//     client_replica.go (replicas, their sessions and dials, the
//     resolver's updates, ejection, the ready set), client_call.go
//     (placing a call, failover and retries), client_dialfail.go (a
//     call's error when dials fail: the dials' own code when every
//     replica failed for good), client_hedge.go (hedged calls),
//     client_go.go (Client.Go), client_policy.go (the connect
//     limit, the retry budget), client_options.go (its options), conn.go
//     (Conn: what Invoke and generated clients call over); package
//     resolver (targets to address sets), package balancer (placing
//     calls, ejection, backoff, retry budget).
//   - Transports: package transport (the interface) and transport/udp,
//     transport/tcp, transport/shm, transport/memnet; tcp_listen.go
//     (opening "tcp://" endpoints); transport/transporttest and
//     transport/rpctest are the suites each passes.
package erpc
