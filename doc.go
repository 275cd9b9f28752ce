// Package erpc is a fast general-purpose RPC library: eRPC's design
// (Kalia et al., NSDI 2019) in Go, over UDP, shared memory or an in-memory
// network.
//
// # Usage
//
// A server registers handlers on an endpoint:
//
//	ep, err := erpc.Listen("0.0.0.0:31850")
//	if err != nil { ... }
//	defer ep.Close()
//	ep.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
//		return req, nil
//	})
//
// A client dials a session and calls:
//
//	s, err := erpc.Dial(ctx, "10.0.0.1:31850")
//	if err != nil { ... }
//	defer s.Close()
//	resp, err := s.Call(ctx, "Echo", []byte("hi"), nil)
//
// Typed handlers and calls use generics and a codec chosen by type
// (protobuf messages, encoding.BinaryMarshaler, or []byte): see Register and
// Invoke. HandleRaw is the zero-copy, zero-allocation form.
//
// # Concurrency
//
// An Endpoint is one event loop goroutine, which owns all its protocol state
// (eRPC's Rpc). Calls and responses from other goroutines reach it through a
// queue plus one wake-up. Handlers run inline on the loop by default (the
// fastest path for short handlers); Background handlers run on a worker pool
// fed by one bounded queue, and a request that finds it full is refused at
// once with ResourceExhausted instead of waiting. Session.Go continuations
// run on the loop, which is where nested calls (a handler that calls another
// server before it responds) are made. Use several endpoints for several
// cores.
//
// The loop waits in one of two ways: by default it polls, yielding the
// processor, for a window after its last work, then sleeps in the Go
// netpoller; the window adapts between 50 µs and 1 ms, growing when a sleep
// was cut short by work and shrinking when the endpoint is idle (WithSpin
// fixes it). WithBusyPoll spins on a goroutine locked to its OS thread,
// for the lowest latency at the cost of a core.
//
// # Errors
//
// Every failed call returns an *Error with a Code (the gRPC set). A call
// whose context ends returns Canceled or DeadlineExceeded, and errors.Is
// matches context.Canceled or context.DeadlineExceeded. A server that is
// gone, restarted, or closed gives Unavailable within the failure timeout
// (WithFailureTimeout). A full server gives ResourceExhausted at once.
//
// # Delivery
//
// erpc runs a request at most once: retransmissions, duplicates and
// reordering never run a handler twice. A call that fails with Unavailable
// may or may not have run; erpc does not retry it.
//
// # Limitations
//
// Messages are at most 8 MiB by default (WithMaxMessageSize). There is no
// encryption or authentication; run erpc on a trusted network. Congestion
// control is not implemented yet: each session is limited to its credits
// (one bandwidth-delay product) in flight.
package erpc
