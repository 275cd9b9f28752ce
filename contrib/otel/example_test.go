package otel_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A client and a server, each with a StatsHandler: a call makes a client
// span and, its child, a server span. (A program would set the global
// providers and propagator once, otel.SetTracerProvider and the like, and
// call NewStatsHandler with no options.)
func ExampleNewStatsHandler() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	opts := []erpcotel.Option{
		erpcotel.WithTracerProvider(tp),
		erpcotel.WithMeterProvider(mp),
		erpcotel.WithPropagators(propagation.TraceContext{}),
	}

	srv := erpc.NewServer()
	srv.Handle("/greet.Greeter/Hello", func(ctx context.Context, req []byte) ([]byte, error) {
		// The handler's context holds the server span.
		trace.SpanFromContext(ctx).AddEvent("greeting")
		return append([]byte("hello, "), req...), nil
	})
	ep, err := srv.Listen("mem://example-otel", erpc.WithStatsHandler(erpcotel.NewStatsHandler(opts...)))
	if err != nil {
		panic(err)
	}
	defer ep.Close()

	ctx := context.Background()
	s, err := erpc.Dial(ctx, "mem://example-otel", erpc.WithStatsHandler(erpcotel.NewStatsHandler(opts...)))
	if err != nil {
		panic(err)
	}
	resp, err := s.Call(ctx, "/greet.Greeter/Hello", []byte("otel"), nil)
	fmt.Println(string(resp), err)
	s.Close()
	ep.Close() // the server span has ended

	var names []string
	for _, sp := range spans.GetSpans() {
		names = append(names, sp.SpanKind.String()+" "+sp.Name)
	}
	sort.Strings(names)
	fmt.Println(names)
	// Output:
	// hello, otel <nil>
	// [client greet.Greeter/Hello server greet.Greeter/Hello]
}
