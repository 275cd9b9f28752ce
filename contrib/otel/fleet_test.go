package otel_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/balancer"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestFleetClientSpanNamesReplica: a call made with an erpc.Client over
// two replicas (UDP loopback) has a client span whose server.address and server.port
// are those of the replica that served it (each server answers with its
// own address).
func TestFleetClientSpanNamesReplica(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var targets []string
	for range 2 {
		srv := erpc.NewServer()
		var self atomic.Value // set after Listen; read by the handler
		must(t, srv.Handle("Who", func(context.Context, []byte) ([]byte, error) { return []byte(self.Load().(string)), nil }))
		ep, err := srv.Listen("127.0.0.1:0")
		must(t, err)
		t.Cleanup(func() { ep.Close() })
		self.Store(ep.Addr().String())
		targets = append(targets, ep.Addr().String())
	}
	// Round robin, once both replicas are ready: P2C may send a run of
	// serial calls all to the faster one.
	c, err := erpc.NewClient("static:///"+strings.Join(targets, ","), erpc.WithBalancer(balancer.RoundRobin()),
		erpc.WithStatsHandler(erpcotel.NewStatsHandler(erpcotel.WithTracerProvider(tp))))
	must(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ready := 0; ready < 2; time.Sleep(time.Millisecond) {
		if ctx.Err() != nil {
			t.Fatal("the replicas never became ready")
		}
		ready = 0
		for _, r := range c.Replicas() {
			if r.State == erpc.ReplicaReady {
				ready++
			}
		}
	}
	served := map[string]bool{}
	for i := range 20 {
		spans.Reset()
		who, err := c.Call(ctx, "Who", nil, nil)
		must(t, err)
		served[string(who)] = true
		var client *tracetest.SpanStub
		for _, s := range spans.GetSpans() {
			if s.SpanKind == trace.SpanKindClient {
				client = &s
			}
		}
		if client == nil {
			t.Fatalf("call %d: no client span", i)
		}
		host, port := attrOf(client.Attributes, "server.address"), attrOf(client.Attributes, "server.port")
		if got := net.JoinHostPort(host, port); got != string(who) {
			t.Fatalf("call %d served by %s, its span says server %s", i, who, got)
		}
	}
	if len(served) != 2 {
		t.Errorf("20 calls served by %d replicas, want 2", len(served))
	}
}
