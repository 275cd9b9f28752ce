// Package otel traces erpc calls and records their metrics with
// OpenTelemetry, following its stable RPC semantic conventions (semconv
// 1.43, those after 1.37). It is an erpc.StatsHandler: install one on
// every endpoint, client and server, with erpc.WithStatsHandler.
//
//	import (
//		"go.opentelemetry.io/otel"
//		"go.opentelemetry.io/otel/propagation"
//
//		"github.com/erpc-go/erpc"
//		erpcotel "github.com/erpc-go/erpc/contrib/otel"
//	)
//
//	// Once, at start-up: the SDK's providers, with your exporters, and
//	// the propagator that carries trace context from client to server.
//	otel.SetTracerProvider(tp)
//	otel.SetMeterProvider(mp)
//	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
//		propagation.TraceContext{}, propagation.Baggage{}))
//
//	// A server.
//	srv := erpc.NewServer()
//	srv.Handle("/greet.Greeter/Hello", hello)
//	ep, err := srv.Listen("0.0.0.0:31850", erpc.WithTLS(cfg), erpc.WithStatsHandler(erpcotel.NewStatsHandler()))
//
//	// A client: each call is a span, the child of ctx's.
//	s, err := erpc.Dial(ctx, "udp://10.0.0.1:31850", erpc.WithTLS(cfg), erpc.WithStatsHandler(erpcotel.NewStatsHandler()))
//	resp, err := s.Call(ctx, "/greet.Greeter/Hello", req, nil)
//
// The server span is the client span's child: the client's handler adds
// the trace context to the call's metadata (W3C traceparent, with the
// propagator above), the server's reads it there. A handler's context
// holds the server span, so the calls a handler makes with it, and the
// spans it starts, are its children:
//
//	func hello(ctx context.Context, req []byte) ([]byte, error) {
//		trace.SpanFromContext(ctx).AddEvent("looked up")
//		return next.Call(ctx, "/store.Store/Get", req, nil) // a grandchild
//	}
//
// Options give the providers and the propagator instead of the global ones
// (WithTracerProvider, WithMeterProvider, WithPropagators), leave calls
// out (WithFilter), and bound the method names reported
// (WithKnownMethods). A noop provider turns tracing, or metrics, off.
//
// # Spans
//
// One span per call on each side, of kind CLIENT or SERVER, named by the
// call's rpc.method ("greet.Greeter/Hello"; "erpc" when it is _OTHER). It
// starts as erpc starts the call (on a client, as Call is called; on a
// server, as the request arrives whole) and ends as the response arrives
// (client) or leaves (server). Attributes:
//
//	rpc.system.name           "erpc"
//	rpc.method                the method (see Method names)
//	rpc.method_original       the method as called, if rpc.method is _OTHER
//	rpc.response.status_code  the code's gRPC name: "OK", "NOT_FOUND", "DEADLINE_EXCEEDED"...
//	error.type                the same, when the call failed (see Status)
//	server.address, .port     the server's address (client spans)
//	network.peer.address, .port  the other end's address
//	erpc.retransmissions      the request's retransmissions, if any (client spans)
//
// # Status
//
// A client span's status is Error, with the error's message, for every
// code but OK. A server span's is Error only for the codes that mean the
// server failed, as the conventions have it for gRPC: UNKNOWN,
// DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS;
// a NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED... is the server doing
// its job, and leaves its span's status Unset. error.type follows the
// same rule, on spans and metrics. erpc's codes mean gRPC's, and
// rpc.response.status_code uses gRPC's names for them (CANCELLED for
// erpc.Canceled), so dashboards for gRPC read erpc's too.
//
// # Method names
//
// rpc.method is erpc's method name without its leading slash: a generated
// stub's "/greet.Greeter/Hello" is "greet.Greeter/Hello", the fully
// qualified service/method the conventions ask for. A plain name such as
// "Echo" has no service: it stays "Echo". A server's handler only sees
// the methods the server has (erpc answers others Unimplemented without
// telling it), and a client's the names its code calls, so every name is
// reported as is, unless WithKnownMethods lists the known ones: the others
// become _OTHER (their name in rpc.method_original).
//
// # Metrics
//
//	rpc.server.call.duration   histogram, s: rpc.system.name, rpc.method,
//	                           rpc.response.status_code, error.type
//	rpc.client.call.duration   histogram, s: the same, and server.address,
//	                           server.port
//	erpc.client.call.retransmissions  counter, {packet}: request packets
//	                           sent again; rpc.system.name, rpc.method,
//	                           server.address, server.port
//	erpc.server.session.active up-down counter, {session}: sessions clients
//	erpc.client.session.active opened to the endpoint, and that it dialed
//	erpc.server.session.failures  counter, {session}: sessions that ended with
//	erpc.client.session.failures  an error (a client's failed dials too);
//	                           error.type: the code's gRPC name
//
// The durations are in seconds, with DurationBuckets: the conventions'
// advice starts at 5 ms, which every erpc call would fall under, so
// buckets from 10 µs come first. A View changes them.
//
// # Cost
//
// On a client, a call costs the span (the SDK's), the traceparent header
// and a copy of the call's outgoing metadata to add it to; on a server,
// the header's parsing and the span. Metrics cost a histogram record per
// call: their attribute sets are made once per method (and server), and
// recording allocates nothing. See BenchmarkCall and BenchmarkHooks.
//
// Calls made with Session.Go are traced (their span is a root: Go takes
// no context), but erpc does not yet send the trace context with them.
package otel
