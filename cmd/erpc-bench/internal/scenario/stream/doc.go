// Package stream is the stream scenario: erpc's streams (Server.HandleStream,
// Session.NewStream) beside gRPC-Go's streaming over TCP loopback, gRPC
// with a codec that passes bytes through (as package systems' unary grpc
// system), so that protobuf's cost is not counted. Each system's server
// runs in a process of its own (registered with proc: stream-erpc and
// stream-grpc), pinned to CPU 0; the client runs here, on CPU 1.
//
// For each -size and each -streams N, one row per system:
//
//   - msgs_per_s, gbps: N server streams on one session (erpc) or one
//     connection (gRPC), each handler sending size-byte messages as fast
//     as its stream's flow control lets it, the client reading each
//     stream on a goroutine of its own; messages (and their payload bits)
//     received per second over the measured window, all streams summed.
//   - p50_us (p90_us, ...): the round trip of one size-byte message on a
//     bidirectional stream, the client sending, the handler echoing it,
//     one message in flight per stream, N streams at once (ping-pong);
//     measured after the rate, for half of -d.
//
// With -slow (default), a slow-consumer row per size and system: on one
// session (connection), a stream whose reader takes one message a
// millisecond beside a stream read flat out; msgs_per_s is the fast
// stream's, solo_msgs_per_s one stream's alone on the same session,
// measured in the same rounds (before and after, alternately), and
// rel_solo the first over the second (the promise: a slow reader backs
// up only its own stream). Its p50_us is 0 (not measured).
//
// Systems alternate row by row in -rounds rounds (each -d/rounds after a
// warm-up of its own), so that drift over the run touches both alike. A
// rate's warm-up starts once each of its streams has had a first
// message: rates are steady states', not streams' starts.
package stream
