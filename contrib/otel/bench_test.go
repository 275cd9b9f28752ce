package otel_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkCall: a 32-byte call over the in-memory network, without a
// StatsHandler and with this package's on both ends:
//   - otel: an SDK tracer that samples every call (spans go through a
//     batch processor to an exporter that drops them) and an SDK meter;
//   - unsampled: the same, sampling no call (the trace context still
//     crosses);
//   - metrics: no tracing (a no-op tracer provider), SDK metrics only.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	newHandler := func(sampler sdktrace.Sampler, tracing bool) erpc.StatsHandler {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { mp.Shutdown(ctx) })
		opts := []erpcotel.Option{erpcotel.WithMeterProvider(mp), erpcotel.WithPropagators(propagation.TraceContext{})}
		if tracing {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler),
				sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { tp.Shutdown(ctx) })
			opts = append(opts, erpcotel.WithTracerProvider(tp))
		} else {
			opts = append(opts, erpcotel.WithTracerProvider(tracenoop.NewTracerProvider()))
		}
		return erpcotel.NewStatsHandler(opts...)
	}
	for _, c := range []struct {
		name    string
		handler func() erpc.StatsHandler
	}{
		{"none", func() erpc.StatsHandler { return nil }},
		{"otel", func() erpc.StatsHandler { return newHandler(sdktrace.AlwaysSample(), true) }},
		{"unsampled", func() erpc.StatsHandler { return newHandler(sdktrace.NeverSample(), true) }},
		{"metrics", func() erpc.StatsHandler { return newHandler(nil, false) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var srvOpts, cliOpts []erpc.Option
			if h := c.handler(); h != nil {
				srvOpts = append(srvOpts, erpc.WithStatsHandler(h))
				cliOpts = append(cliOpts, erpc.WithStatsHandler(c.handler()))
			}
			srv := erpc.NewServer()
			must(b, srv.Handle("/bench.Echo/Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }))
			addr := memName(b)
			ep, err := srv.Listen(addr, srvOpts...)
			must(b, err)
			defer ep.Close()
			s, err := erpc.Dial(ctx, addr, cliOpts...)
			must(b, err)
			defer s.Close()
			req, resp := make([]byte, 32), make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				if resp, err = s.Call(ctx, "/bench.Echo/Echo", req, resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// capture is a StatsHandler that keeps the arguments of the calls' hooks.
type capture struct {
	cli, srv chan capturedCall
}

type capturedCall struct {
	ctx  context.Context
	info erpc.CallInfo
	end  erpc.CallEnd
}

func (c *capture) CallBegin(ctx context.Context, _ erpc.CallInfo) context.Context { return ctx }
func (c *capture) CallEnd(ctx context.Context, info erpc.CallInfo, end erpc.CallEnd) {
	ch := c.cli
	if info.Server {
		ch = c.srv
	}
	select {
	case ch <- capturedCall{ctx, info, end}:
	default:
	}
}
func (c *capture) SessionEvent(erpc.SessionEvent) {}

// BenchmarkHooks: what the handler's CallBegin and CallEnd cost for one
// call on each side, replayed with the arguments erpc gave them for a
// real call (the server's context carries the caller's traceparent).
func BenchmarkHooks(b *testing.B) {
	ctx := context.Background()
	// A real call, traced, to capture the hooks' arguments.
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(ctx)
	traced := erpcotel.NewStatsHandler(erpcotel.WithTracerProvider(tp), erpcotel.WithPropagators(propagation.TraceContext{}))
	srvCap := &capture{cli: make(chan capturedCall, 1), srv: make(chan capturedCall, 1)}
	srv := erpc.NewServer()
	must(b, srv.Handle("/bench.Echo/Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }))
	addr := memName(b)
	ep, err := srv.Listen(addr, erpc.WithStatsHandler(srvCap))
	must(b, err)
	defer ep.Close()
	cliCap := &capture{cli: make(chan capturedCall, 1), srv: make(chan capturedCall, 1)}
	s, err := erpc.Dial(ctx, addr, erpc.WithStatsHandler(twoHandlers{traced, cliCap}))
	must(b, err)
	defer s.Close()
	_, err = s.Call(ctx, "/bench.Echo/Echo", make([]byte, 32), nil)
	must(b, err)
	cli, server := <-cliCap.cli, <-srvCap.srv
	if md, _ := erpc.IncomingMetadata(server.ctx); md.Get("traceparent") == "" {
		b.Fatal("the server's CallBegin context has no traceparent")
	}

	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: no tracing
	}{{"otel", sdktrace.AlwaysSample()}, {"unsampled", sdktrace.NeverSample()}, {"metrics", nil}} {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		opts := []erpcotel.Option{erpcotel.WithMeterProvider(mp), erpcotel.WithPropagators(propagation.TraceContext{}),
			erpcotel.WithTracerProvider(tracenoop.NewTracerProvider())}
		if c.sampler != nil {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			defer tp.Shutdown(ctx)
			opts = append(opts, erpcotel.WithTracerProvider(tp))
		}
		h := erpcotel.NewStatsHandler(opts...)
		for _, side := range []struct {
			name string
			call capturedCall
		}{{"client", cli}, {"server", server}} {
			b.Run(c.name+"/"+side.name, func(b *testing.B) {
				in := side.call.ctx
				if !side.call.info.Server {
					in = ctx
				}
				b.ReportAllocs()
				for b.Loop() {
					cctx := h.CallBegin(in, side.call.info)
					h.CallEnd(cctx, side.call.info, side.call.end)
				}
			})
		}
		mp.Shutdown(ctx)
	}
}

// twoHandlers tells a and then b.
type twoHandlers struct{ a, b erpc.StatsHandler }

func (t twoHandlers) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	return t.b.CallBegin(t.a.CallBegin(ctx, info), info)
}
func (t twoHandlers) CallEnd(ctx context.Context, info erpc.CallInfo, end erpc.CallEnd) {
	t.a.CallEnd(ctx, info, end)
	t.b.CallEnd(ctx, info, end)
}
func (t twoHandlers) SessionEvent(ev erpc.SessionEvent) {
	t.a.SessionEvent(ev)
	t.b.SessionEvent(ev)
}
