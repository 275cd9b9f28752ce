package otel_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var names atomic.Int64

// memName is an address on the process's in-memory network no other test
// uses.
func memName(t testing.TB) string {
	return fmt.Sprintf("mem://%s-%d", strings.NewReplacer("/", "-").Replace(t.Name()), names.Add(1))
}

// rig is a client and a server, each with its own handler, sharing one
// tracer provider (its spans in spans) and one meter provider (read by
// reader).
type rig struct {
	spans   *tracetest.InMemoryExporter
	reader  *sdkmetric.ManualReader
	tp      *sdktrace.TracerProvider
	srv     *erpc.Endpoint
	sess    *erpc.Session
	handled chan handled // what the server's handlers saw
}

type handled struct {
	span        trace.SpanContext // the handler context's span
	traceparent string
	user        string
}

func newRig(t *testing.T, opts ...erpcotel.Option) *rig {
	t.Helper()
	r := &rig{
		spans:   tracetest.NewInMemoryExporter(),
		reader:  sdkmetric.NewManualReader(),
		handled: make(chan handled, 16),
	}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	opts = append([]erpcotel.Option{erpcotel.WithTracerProvider(r.tp), erpcotel.WithMeterProvider(mp),
		erpcotel.WithPropagators(propagation.TraceContext{})}, opts...)

	srv := erpc.NewServer()
	see := func(ctx context.Context) {
		md, _ := erpc.IncomingMetadata(ctx)
		r.handled <- handled{trace.SpanContextFromContext(ctx), md.Get("traceparent"), md.Get("x-user")}
	}
	must(t, srv.Handle("/test.Echo/Say", func(ctx context.Context, req []byte) ([]byte, error) {
		see(ctx)
		return req, nil
	}))
	must(t, srv.Handle("/test.Echo/Find", func(ctx context.Context, _ []byte) ([]byte, error) {
		see(ctx)
		return nil, erpc.Errorf(erpc.NotFound, "no such thing")
	}))
	must(t, srv.Handle("/test.Echo/Crash", func(ctx context.Context, _ []byte) ([]byte, error) {
		see(ctx)
		return nil, erpc.Errorf(erpc.Internal, "disk on fire")
	}))
	must(t, srv.Handle("Ping", func(ctx context.Context, req []byte) ([]byte, error) {
		see(ctx)
		return req, nil
	}))
	addr := memName(t)
	var err error
	r.srv, err = srv.Listen(addr, erpc.WithStatsHandler(erpcotel.NewStatsHandler(opts...)))
	must(t, err)
	t.Cleanup(func() { r.srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.sess, err = erpc.Dial(ctx, addr, erpc.WithStatsHandler(erpcotel.NewStatsHandler(opts...)))
	must(t, err)
	t.Cleanup(func() { r.sess.Close() })
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitSpans waits for n spans: a server span ends on the server's loop
// just after the response leaves, maybe after the client has it.
func (r *rig) waitSpans(t *testing.T, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		spans := r.spans.GetSpans()
		if len(spans) >= n {
			if len(spans) > n {
				t.Fatalf("%d spans, want %d: %v", len(spans), n, spanNames(spans))
			}
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans after 5s, want %d: %v", len(spans), n, spanNames(spans))
		}
		time.Sleep(time.Millisecond)
	}
}
