package otel

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/erpc-go/erpc"
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/erpc-go/erpc/contrib/otel"

// DurationBuckets are the call duration histograms' bucket boundaries, in
// seconds: the conventions' advice (5 ms to 10 s) below which erpc adds
// 10 µs to 2.5 ms, where its calls take place. A View overrides them.
var DurationBuckets = []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
	0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Option configures NewStatsHandler.
type Option func(*config)

type config struct {
	tp     trace.TracerProvider
	mp     metric.MeterProvider
	prop   propagation.TextMapPropagator
	filter func(erpc.CallInfo) bool
	known  map[string]bool
}

// WithTracerProvider makes spans with tp (default: the global one,
// otel.GetTracerProvider). A trace/noop provider turns tracing off.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider records metrics with mp (default: the global one,
// otel.GetMeterProvider). A metric/noop provider turns metrics off.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithPropagators carries the trace context across calls with p (default:
// the global one, otel.GetTextMapPropagator, which propagates nothing
// until the program sets one: usually
// propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
// propagation.Baggage{}), W3C trace context and baggage).
func WithPropagators(p propagation.TextMapPropagator) Option { return func(c *config) { c.prop = p } }

// WithFilter instruments only the calls for which f returns true: the
// others get no span, record no metric, and carry no trace context. f
// must be quick, and give the same answer for a call's CallBegin and
// CallEnd (it sees the same CallInfo).
func WithFilter(f func(info erpc.CallInfo) bool) Option { return func(c *config) { c.filter = f } }

// WithKnownMethods lists the methods the handler reports by name (as
// erpc names them: "/pkg.Service/Method", "Echo"); any other is reported
// as rpc.method "_OTHER" (its name in rpc.method_original, on spans
// only), as the conventions ask of an instrumentation that cannot tell a
// method it knows from one it does not. By default every method is known:
// a server's StatsHandler only sees calls of the methods it serves, and a
// client's only calls its own code makes. Pass erpc.Server.Methods() to
// bound a gateway's or a proxy's.
func WithKnownMethods(methods ...string) Option {
	return func(c *config) {
		c.known = make(map[string]bool, len(methods))
		for _, m := range methods {
			c.known[m] = true
		}
	}
}

// NewStatsHandler returns an erpc.StatsHandler that traces calls with
// OpenTelemetry and records their metrics, following the stable RPC
// semantic conventions (see the package documentation for what it
// emits). Install it on both ends with erpc.WithStatsHandler; one handler
// may serve any number of endpoints.
func NewStatsHandler(opts ...Option) erpc.StatsHandler {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otelapi.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otelapi.GetMeterProvider()
	}
	if c.prop == nil {
		c.prop = otelapi.GetTextMapPropagator()
	}
	h := &handler{
		tracer: c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:   c.prop,
		filter: c.filter,
		known:  c.known,
	}
	meter := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	h.duration[sideServer], err = meter.Float64Histogram("rpc.server.call.duration",
		metric.WithDescription("Measures the duration of an incoming Remote Procedure Call (RPC)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(DurationBuckets...))
	handle(err)
	h.duration[sideClient], err = meter.Float64Histogram("rpc.client.call.duration",
		metric.WithDescription("Measures the duration of an outgoing Remote Procedure Call (RPC)."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(DurationBuckets...))
	handle(err)
	h.retransmits, err = meter.Int64Counter("erpc.client.call.retransmissions",
		metric.WithDescription("Packets erpc sent again for outgoing calls, lost or late the first time."),
		metric.WithUnit("{packet}"))
	handle(err)
	h.sessions[sideServer], err = meter.Int64UpDownCounter("erpc.server.session.active",
		metric.WithDescription("Open sessions that clients opened to the endpoint."), metric.WithUnit("{session}"))
	handle(err)
	h.sessions[sideClient], err = meter.Int64UpDownCounter("erpc.client.session.active",
		metric.WithDescription("Open sessions that the endpoint dialed."), metric.WithUnit("{session}"))
	handle(err)
	h.sessionFailures[sideServer], err = meter.Int64Counter("erpc.server.session.failures",
		metric.WithDescription("Sessions clients opened to the endpoint that ended with an error."), metric.WithUnit("{session}"))
	handle(err)
	h.sessionFailures[sideClient], err = meter.Int64Counter("erpc.client.session.failures",
		metric.WithDescription("Sessions the endpoint dialed that failed or ended with an error."), metric.WithUnit("{session}"))
	handle(err)
	empty := map[entryKey]*entry{}
	h.entries.Store(&empty)
	return h
}

// handle reports an error creating an instrument the OpenTelemetry way:
// the instrument is still usable (a no-op).
func handle(err error) {
	if err != nil {
		otelapi.Handle(err)
	}
}

const (
	sideClient = 0
	sideServer = 1
)

func side(server bool) int {
	if server {
		return sideServer
	}
	return sideClient
}

type handler struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	filter func(erpc.CallInfo) bool
	known  map[string]bool

	duration        [2]metric.Float64Histogram // by side
	retransmits     metric.Int64Counter
	sessions        [2]metric.Int64UpDownCounter
	sessionFailures [2]metric.Int64Counter
	tracker         sessionTracker

	// entries holds what the handler computes once per method, side and
	// (for a client) server; it is replaced, never changed.
	entries atomic.Pointer[map[entryKey]*entry]
	mu      sync.Mutex // held to replace entries
}

// maxEntries bounds the entries kept; past it (a client calling very many
// servers) each call computes its own.
const maxEntries = 4096

type entryKey struct {
	method string
	server bool
	peer   netip.AddrPort // the server, for a client's calls
}

// entry is what the calls of one entryKey share: their span's name and
// start options, and their metrics' attributes for each code.
type entry struct {
	spanName string
	start    []trace.SpanStartOption
	end      [numCodes][]attribute.KeyValue // span attributes by code
	record   [numCodes][]metric.RecordOption
	retx     []metric.AddOption
	base     []attribute.KeyValue // the metrics' attributes all calls share
}

func (h *handler) entry(info erpc.CallInfo) *entry {
	k := entryKey{method: info.Method, server: info.Server}
	if !info.Server {
		k.peer = info.Peer
	}
	m := *h.entries.Load()
	if e := m[k]; e != nil {
		return e
	}
	e := h.newEntry(k)
	h.mu.Lock()
	defer h.mu.Unlock()
	m = *h.entries.Load()
	if old := m[k]; old != nil {
		return old
	}
	if len(m) < maxEntries {
		next := make(map[entryKey]*entry, len(m)+1)
		maps.Copy(next, m)
		next[k] = e
		h.entries.Store(&next)
	}
	return e
}

func (h *handler) newEntry(k entryKey) *entry {
	method := rpcMethod(k.method)
	e := &entry{spanName: method}
	base := []attribute.KeyValue{semconv.RPCSystemNameKey.String(systemName), semconv.RPCMethodKey.String(method)}
	var spanOnly []attribute.KeyValue
	if method == other || (h.known != nil && !h.known[k.method]) {
		e.spanName = systemName
		base[1] = semconv.RPCMethodKey.String(other)
		spanOnly = append(spanOnly, semconv.RPCMethodOriginalKey.String(k.method))
	}
	if !k.server && k.peer.IsValid() {
		addr, port := k.peer.Addr().String(), int(k.peer.Port())
		base = append(base, semconv.ServerAddressKey.String(addr), semconv.ServerPortKey.Int(port))
		spanOnly = append(spanOnly, semconv.NetworkPeerAddressKey.String(addr), semconv.NetworkPeerPortKey.Int(port))
	}
	kind := trace.SpanKindClient
	if k.server {
		kind = trace.SpanKindServer
	}
	startAttrs := append(append([]attribute.KeyValue{}, base...), spanOnly...)
	e.start = []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(startAttrs...)}
	for c := range numCodes {
		code := erpc.Code(c)
		e.end[c] = endAttrs(code, k.server)
		attrs := append(append([]attribute.KeyValue{}, base...), e.end[c]...)
		e.record[c] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
	}
	e.retx = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(base...))}
	e.base = base
	return e
}

// endAttrs are the attributes a call that ended with code adds.
func endAttrs(code erpc.Code, server bool) []attribute.KeyValue {
	status := statusCode(code)
	attrs := []attribute.KeyValue{semconv.RPCResponseStatusCodeKey.String(status)}
	if isError(code, server) {
		attrs = append(attrs, semconv.ErrorTypeKey.String(status))
	}
	return attrs
}

// CallBegin starts the call's span: on a server, as a child of the trace
// context the caller sent in its metadata; on a client, as a child of
// ctx's span, with the trace context added to the call's outgoing
// metadata.
func (h *handler) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	if h.filter != nil && !h.filter(info) {
		return ctx
	}
	e := h.entry(info)
	if info.Server {
		md, _ := erpc.IncomingMetadata(ctx)
		ctx = h.prop.Extract(ctx, MetadataCarrier(md))
		ctx, span := h.tracer.Start(ctx, e.spanName, e.start...)
		if span.IsRecording() && info.Peer.IsValid() {
			span.SetAttributes(semconv.NetworkPeerAddressKey.String(info.Peer.Addr().String()),
				semconv.NetworkPeerPortKey.Int(int(info.Peer.Port())))
		}
		return ctx
	}
	ctx, _ = h.tracer.Start(ctx, e.spanName, e.start...)
	md, _ := erpc.OutgoingMetadata(ctx)
	out := make(erpc.Metadata, len(md)+2)
	maps.Copy(out, md) // Set replaces a key's slice, never appends to md's
	h.prop.Inject(ctx, MetadataCarrier(out))
	if len(out) == 0 {
		return ctx // a propagator that writes nothing
	}
	return erpc.NewOutgoingContext(ctx, out)
}

// CallEnd ends the call's span and records its duration.
func (h *handler) CallEnd(ctx context.Context, info erpc.CallInfo, end erpc.CallEnd) {
	if h.filter != nil && !h.filter(info) {
		return
	}
	e := h.entry(info)
	c := int(end.Code)
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		if c < numCodes {
			span.SetAttributes(e.end[c]...)
		} else {
			span.SetAttributes(endAttrs(end.Code, info.Server)...)
		}
		if end.Retransmits > 0 {
			span.SetAttributes(attribute.Int("erpc.retransmissions", end.Retransmits))
		}
		if isError(end.Code, info.Server) {
			msg := end.Code.String()
			if end.Err != nil {
				msg = end.Err.Error()
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	span.End()
	d := h.duration[side(info.Server)]
	if d.Enabled(ctx) {
		if c < numCodes {
			d.Record(ctx, end.Duration.Seconds(), e.record[c]...)
		} else {
			attrs := append(slices.Clone(e.base), endAttrs(end.Code, info.Server)...)
			d.Record(ctx, end.Duration.Seconds(), metric.WithAttributes(attrs...))
		}
	}
	if end.Retransmits > 0 {
		h.retransmits.Add(ctx, int64(end.Retransmits), e.retx...)
	}
}

// SessionEvent counts the endpoint's open sessions, and those that ended
// with an error.
func (h *handler) SessionEvent(ev erpc.SessionEvent) {
	server, delta := h.tracker.update(ev)
	s := side(server)
	ctx := context.Background()
	if delta != 0 {
		h.sessions[s].Add(ctx, int64(delta))
	}
	if !ev.Up && ev.Err != nil {
		h.sessionFailures[s].Add(ctx, 1, metric.WithAttributes(semconv.ErrorTypeKey.String(statusCode(erpc.CodeOf(ev.Err)))))
	}
}
