package otel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	erpcotel "github.com/erpc-go/erpc/contrib/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

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
