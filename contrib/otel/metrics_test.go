package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	"github.com/erpc-go/erpc/transport/memnet"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestMetrics: the call duration histograms, in seconds, with the
// conventions' attributes; the open session counters.
func TestMetrics(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	start := time.Now()
	for range 3 {
		if _, err := r.sess.Call(ctx, "/test.Echo/Say", []byte("hi"), nil); err != nil {
			t.Fatal(err)
		}
	}
	r.sess.Call(ctx, "/test.Echo/Find", nil, nil)
	elapsed := time.Since(start).Seconds()
	r.waitSpans(t, 8) // every server call has ended
	srvAddr := r.srv.Addr()
	clientBase := map[string]any{"rpc.system.name": "erpc", "server.address": srvAddr.Addr().String(), "server.port": int64(srvAddr.Port())}
	serverBase := map[string]any{"rpc.system.name": "erpc"}
	with := func(base map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	var rm metricdata.ResourceMetrics
	must(t, r.reader.Collect(ctx, &rm))
	for _, c := range []struct {
		metric string
		attrs  map[string]any
		count  uint64
	}{
		{"rpc.client.call.duration", with(clientBase, "rpc.method", "test.Echo/Say", "rpc.response.status_code", "OK"), 3},
		{"rpc.client.call.duration", with(clientBase, "rpc.method", "test.Echo/Find", "rpc.response.status_code", "NOT_FOUND", "error.type", "NOT_FOUND"), 1},
		{"rpc.server.call.duration", with(serverBase, "rpc.method", "test.Echo/Say", "rpc.response.status_code", "OK"), 3},
		{"rpc.server.call.duration", with(serverBase, "rpc.method", "test.Echo/Find", "rpc.response.status_code", "NOT_FOUND"), 1},
	} {
		m := findMetric(t, rm, c.metric)
		if m.Unit != "s" {
			t.Errorf("%s: unit %q", c.metric, m.Unit)
		}
		hist, ok := m.Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s: %T, not a float histogram", c.metric, m.Data)
		}
		p := point(hist.DataPoints, c.attrs)
		if p == nil {
			t.Errorf("%s: no point with attributes %v; points: %v", c.metric, c.attrs, pointAttrs(hist.DataPoints))
			continue
		}
		if p.Count != c.count || p.Sum <= 0 || p.Sum > elapsed {
			t.Errorf("%s %v: count %d sum %gs, want count %d and 0 < sum <= %gs", c.metric, c.attrs, p.Count, p.Sum, c.count, elapsed)
		}
		if len(p.Bounds) == 0 || p.Bounds[0] != erpcotel.DurationBuckets[0] {
			t.Errorf("%s: bounds %v", c.metric, p.Bounds)
		}
	}
	for _, name := range []string{"erpc.client.session.active", "erpc.server.session.active"} {
		if v := sumValue(t, rm, name); v != 1 {
			t.Errorf("%s = %d, want 1", name, v)
		}
	}

	// Closing the session brings both counts back to 0.
	r.sess.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		must(t, r.reader.Collect(ctx, &rm))
		c, s := sumValue(t, rm, "erpc.client.session.active"), sumValue(t, rm, "erpc.server.session.active")
		if c == 0 && s == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close: %d client and %d server sessions active", c, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func findMetric(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != erpcotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

func sumValue(t *testing.T, rm metricdata.ResourceMetrics, name string) int64 {
	t.Helper()
	s, ok := findMetric(t, rm, name).Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is not an int sum", name)
	}
	var v int64
	for _, p := range s.DataPoints {
		v += p.Value
	}
	return v
}

// point is the data point whose attributes are exactly want.
func point(ps []metricdata.HistogramDataPoint[float64], want map[string]any) *metricdata.HistogramDataPoint[float64] {
	for i, p := range ps {
		if p.Attributes.Len() != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			if g, ok := p.Attributes.Value(attribute.Key(k)); !ok || g.AsInterface() != v {
				match = false
			}
		}
		if match {
			return &ps[i]
		}
	}
	return nil
}

func pointAttrs(ps []metricdata.HistogramDataPoint[float64]) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Attributes.Encoded(attribute.DefaultEncoder()))
	}
	return out
}

// TestRetransmissions: over a lossy network, the client's spans and the
// retransmissions counter count the request packets sent again.
func TestRetransmissions(t *testing.T) {
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	srvTr, err := n.Listen("server")
	must(t, err)
	cliTr, err := n.Listen("client")
	must(t, err)
	n.SetLink(cliTr.LocalAddr(), srvTr.LocalAddr(), memnet.LinkConfig{Loss: 0.5})
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	h := erpcotel.NewStatsHandler(erpcotel.WithTracerProvider(tp), erpcotel.WithMeterProvider(mp))
	srv := erpc.NewServer()
	must(t, srv.Handle("Ping", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }))
	ep, err := srv.Listen("", erpc.WithTransport(srvTr))
	must(t, err)
	defer ep.Close()
	cli, err := erpc.Listen("", erpc.WithTransport(cliTr), erpc.WithStatsHandler(h))
	must(t, err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := cli.Dial(ctx, "server")
	must(t, err)
	for range 10 {
		_, err := sess.Call(ctx, "Ping", []byte("x"), nil)
		must(t, err)
	}
	var inSpans int64
	for _, s := range spans.GetSpans() {
		for _, kv := range s.Attributes {
			if kv.Key == "erpc.retransmissions" {
				inSpans += kv.Value.AsInt64()
			}
		}
	}
	var rm metricdata.ResourceMetrics
	must(t, reader.Collect(ctx, &rm))
	if counted := sumValue(t, rm, "erpc.client.call.retransmissions"); inSpans == 0 || counted != inSpans {
		t.Errorf("%d retransmissions in spans, %d counted", inSpans, counted)
	}
}
