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
//	ep, err := srv.Listen("0.0.0.0:31850")
//	if err != nil { ... }
//	defer ep.Close()
//
// A client dials a session and calls:
//
//	s, err := erpc.Dial(ctx, "10.0.0.1:31850")
//	if err != nil { ... }
//	defer s.Close()
//	resp, err := s.Call(ctx, "Echo", []byte("hi"), nil)
//
// A target's host may be a name ("db.internal:31850"), looked up with the
// dial's context, whose addresses are tried in turn, or an IPv4 or IPv6
// address ("[fd00::1]:31850"). An endpoint listening on "[::]" or ":0"
// is dual-stack: it serves, and dials, both families.
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
// queue plus one wake-up. Handlers run inline on the loop by default (the
// fastest path for short handlers), and may block: a handler still running
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
// too long is logged (WithStallLog). Use several endpoints for several
// cores.
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
// # Errors
//
// Every failed call returns an *Error with a Code (the gRPC set). A call
// whose context ends returns Canceled or DeadlineExceeded, and errors.Is
// matches context.Canceled or context.DeadlineExceeded; the deadline
// travels to the handler's context. A server that is gone, restarted, or
// closed gives Unavailable within the failure timeout (WithFailureTimeout).
// A full server gives ResourceExhausted at once; a message over the
// session's limit, InvalidArgument with both sizes; a method the server
// does not have, Unimplemented with its name. NotExecuted (errors.Is with
// ErrNotExecuted) tells a failure that provably never ran from one that
// may have (see Delivery). A refusal of one call, by the server or
// locally, leaves its session up for the next.
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
// a packet the client has in flight). erpc retries only the last kind,
// once, on a new session; every other failure, and every call that may
// have run, is the caller's to retry or not, and NotExecuted says when that
// is safe. These promises hold against the network's own behaviour (loss,
// duplication, reordering, NAT rebinding and port reuse) and against
// attackers who cannot read the traffic; see Limitations.
//
// # Limitations
//
// Messages are at most 8 MiB by default (WithMaxMessageSize). There is no
// encryption or authentication yet: session tokens travel in clear, so an
// attacker who reads the traffic can forge packets, end sessions, and make a
// handler run twice; so can one who has read a session's token and sends
// from its client's IP (a neighbour behind the same NAT). A few checks make
// it harder, none makes it impossible (internal/wire's doc, Threat model);
// run erpc on a trusted network. Handlers run on the event loop unless
// registered with Background: one that blocks holds every call of its
// endpoint meanwhile (logged after WithStallLog). Unary calls only: no
// streaming yet.
package erpc
