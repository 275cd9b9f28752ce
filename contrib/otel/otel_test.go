package otel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	"github.com/erpc-go/erpc/transport/memnet"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
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

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"/"+s.SpanKind.String())
	}
	return out
}

func find(t *testing.T, spans tracetest.SpanStubs, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name && s.SpanKind == kind {
			return s
		}
	}
	t.Fatalf("no %s span %q in %v", kind, name, spanNames(spans))
	return tracetest.SpanStub{}
}

// checkAttrs checks that attrs holds want exactly, a nil value in want
// meaning the key must be absent.
func checkAttrs(t *testing.T, what string, attrs []attribute.KeyValue, want map[string]any) {
	t.Helper()
	got := map[string]any{}
	for _, kv := range attrs {
		got[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == nil && ok:
			t.Errorf("%s: %s = %v, want none", what, k, g)
		case v != nil && (!ok || g != v):
			t.Errorf("%s: %s = %v, want %v (all: %v)", what, k, g, v, got)
		}
	}
}

// TestTracing: a successful call and a failing one each make a client and
// a server span, the server's a child of the client's through the
// traceparent the call's metadata carried, with the conventions'
// attributes and status; the handler's context has the server span.
func TestTracing(t *testing.T) {
	r := newRig(t)
	root, rootSpan := r.tp.Tracer("test").Start(context.Background(), "root")
	// The caller's own metadata travels beside the trace context, and its
	// map is left as it was.
	userMD := erpc.Pairs("x-user", "ann")
	ctx := erpc.NewOutgoingContext(root, userMD)
	if resp, err := r.sess.Call(ctx, "/test.Echo/Say", []byte("hello"), nil); err != nil || string(resp) != "hello" {
		t.Fatalf("Say: %q %v", resp, err)
	}
	if _, ok := userMD["traceparent"]; ok || len(userMD) != 1 {
		t.Fatalf("the caller's metadata changed: %v", userMD)
	}
	_, err := r.sess.Call(root, "/test.Echo/Find", []byte("x"), nil)
	if erpc.CodeOf(err) != erpc.NotFound {
		t.Fatalf("Find: %v", err)
	}
	rootSpan.End()
	spans := r.waitSpans(t, 5)

	srvAddr := r.srv.Addr()
	for _, c := range []struct {
		method, status, errType string
		clientErr, serverErr    bool
	}{
		{"test.Echo/Say", "OK", "", false, false},
		{"test.Echo/Find", "NOT_FOUND", "NOT_FOUND", true, false},
	} {
		cli := find(t, spans, c.method, trace.SpanKindClient)
		srv := find(t, spans, c.method, trace.SpanKindServer)
		if cli.Parent.SpanID() != rootSpan.SpanContext().SpanID() {
			t.Errorf("%s: the client span's parent is %v, not the caller's span", c.method, cli.Parent.SpanID())
		}
		if srv.Parent.SpanID() != cli.SpanContext.SpanID() || srv.Parent.TraceID() != cli.SpanContext.TraceID() || !srv.Parent.IsRemote() {
			t.Errorf("%s: the server span's parent is %v, not the client span %v", c.method, srv.Parent, cli.SpanContext)
		}
		h := <-r.handled
		if h.span.SpanID() != srv.SpanContext.SpanID() {
			t.Errorf("%s: the handler's context has span %v, not the server span %v", c.method, h.span.SpanID(), srv.SpanContext.SpanID())
		}
		if want := fmt.Sprintf("00-%s-%s-01", cli.SpanContext.TraceID(), cli.SpanContext.SpanID()); h.traceparent != want {
			t.Errorf("%s: the server got traceparent %q, want %q", c.method, h.traceparent, want)
		}
		if c.method == "test.Echo/Say" && h.user != "ann" {
			t.Errorf("the caller's metadata got lost: x-user = %q", h.user)
		}
		var errType any
		if c.errType != "" {
			errType = c.errType
		}
		checkAttrs(t, c.method+" client", cli.Attributes, map[string]any{
			"rpc.system.name":          "erpc",
			"rpc.method":               c.method,
			"rpc.response.status_code": c.status,
			"error.type":               errType,
			"server.address":           srvAddr.Addr().String(),
			"server.port":              int64(srvAddr.Port()),
			"network.peer.address":     srvAddr.Addr().String(),
			"network.peer.port":        int64(srvAddr.Port()),
			"rpc.method_original":      nil,
		})
		checkAttrs(t, c.method+" server", srv.Attributes, map[string]any{
			"rpc.system.name":          "erpc",
			"rpc.method":               c.method,
			"rpc.response.status_code": c.status,
			"error.type":               nil, // NOT_FOUND is not the server's fault
			"server.address":           nil,
		})
		if peer := attrOf(srv.Attributes, "network.peer.address"); peer == "" {
			t.Errorf("%s server: no network.peer.address", c.method)
		}
		wantStatus := func(s sdktrace.Status, isErr bool, side string) {
			t.Helper()
			if isErr && (s.Code != codes.Error || !strings.Contains(s.Description, "no such thing")) {
				t.Errorf("%s %s: status %+v, want Error with the message", c.method, side, s)
			}
			if !isErr && s.Code != codes.Unset {
				t.Errorf("%s %s: status %+v, want Unset", c.method, side, s)
			}
		}
		wantStatus(cli.Status, c.clientErr, "client")
		wantStatus(srv.Status, c.serverErr, "server")
	}
}

func attrOf(attrs []attribute.KeyValue, key string) string {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestServerFault: a code that means the server failed (INTERNAL) is an
// error on the server span too, with error.type.
func TestServerFault(t *testing.T) {
	r := newRig(t)
	if _, err := r.sess.Call(context.Background(), "/test.Echo/Crash", nil, nil); erpc.CodeOf(err) != erpc.Internal {
		t.Fatalf("Crash: %v", err)
	}
	<-r.handled
	spans := r.waitSpans(t, 2)
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := find(t, spans, "test.Echo/Crash", kind)
		if s.Status.Code != codes.Error || !strings.Contains(s.Status.Description, "disk on fire") {
			t.Errorf("%s: status %+v", kind, s.Status)
		}
		checkAttrs(t, kind.String(), s.Attributes, map[string]any{"error.type": "INTERNAL", "rpc.response.status_code": "INTERNAL"})
	}
	if s := find(t, spans, "test.Echo/Crash", trace.SpanKindClient); s.Parent.IsValid() {
		t.Errorf("a call without a span in its context has a parent: %v", s.Parent)
	}
}

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

// TestFilterAndKnownMethods: a filtered call is not traced and carries no
// trace context; a method not in WithKnownMethods is "_OTHER".
func TestFilterAndKnownMethods(t *testing.T) {
	r := newRig(t,
		erpcotel.WithFilter(func(info erpc.CallInfo) bool { return info.Method != "Ping" }),
		erpcotel.WithKnownMethods("/test.Echo/Find"))
	ctx := context.Background()
	if _, err := r.sess.Call(ctx, "Ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	if h := <-r.handled; h.traceparent != "" || h.span.IsValid() {
		t.Fatalf("a filtered call carried trace context: %+v", h)
	}
	if _, err := r.sess.Call(ctx, "/test.Echo/Say", nil, nil); err != nil {
		t.Fatal(err)
	}
	<-r.handled
	spans := r.waitSpans(t, 2)
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := find(t, spans, "erpc", kind)
		checkAttrs(t, kind.String(), s.Attributes, map[string]any{"rpc.method": "_OTHER", "rpc.method_original": "/test.Echo/Say"})
	}
}

// TestAsyncCall: a Session.Go call gets a client span too (a root: Go
// takes no context), and Go sends the trace context CallBegin put in the
// metadata, so the server span is the client span's child.
func TestAsyncCall(t *testing.T) {
	r := newRig(t)
	done := make(chan error, 1)
	r.sess.Go("Ping", []byte("x"), nil, func(_ []byte, err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h := <-r.handled
	spans := r.waitSpans(t, 2)
	cli := find(t, spans, "Ping", trace.SpanKindClient)
	checkAttrs(t, "Go", cli.Attributes, map[string]any{"rpc.method": "Ping", "rpc.response.status_code": "OK"})
	srv := find(t, spans, "Ping", trace.SpanKindServer)
	if h.traceparent == "" {
		t.Fatal("Session.Go sent no trace context: the server span is a root")
	}
	if srv.Parent.SpanID() != cli.SpanContext.SpanID() {
		t.Errorf("the server span's parent is %v, not the client span %v", srv.Parent, cli.SpanContext)
	}
}

// TestMetadataCarrier: the carrier reads and writes erpc metadata.
func TestMetadataCarrier(t *testing.T) {
	md := erpc.Metadata{}
	c := erpcotel.MetadataCarrier(md)
	c.Set("TraceParent", "v1")
	c.Set("traceparent", "v2")
	if got := c.Get("TRACEPARENT"); got != "v2" || len(md["traceparent"]) != 1 {
		t.Fatalf("Get = %q, md = %v", got, md)
	}
	if keys := c.Keys(); len(keys) != 1 || keys[0] != "traceparent" {
		t.Fatalf("Keys = %v", keys)
	}
	if got := erpcotel.MetadataCarrier(nil).Get("x"); got != "" {
		t.Fatal(got)
	}
}

// TestUnreachable: a call to a server that is gone fails on the client
// with an error span; its session's failure is counted.
func TestUnreachable(t *testing.T) {
	r := newRig(t)
	r.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := r.sess.Call(ctx, "Ping", nil, nil)
	if err == nil {
		t.Fatal("a call to a closed server succeeded")
	}
	spans := r.waitSpans(t, 1)
	s := find(t, spans, "Ping", trace.SpanKindClient)
	if s.Status.Code != codes.Error || attrOf(s.Attributes, "error.type") != erpcotel.StatusCodeForTest(erpc.CodeOf(err)) {
		t.Errorf("span %+v %v for %v", s.Status, s.Attributes, err)
	}
	var e *erpc.Error
	if !errors.As(err, &e) {
		t.Errorf("%T", err)
	}
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
