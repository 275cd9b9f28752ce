package prometheus

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/erpc-go/erpc"
	"github.com/prometheus/client_golang/prometheus"
)

// DefBuckets are the handling time histograms' default buckets, in
// seconds: Prometheus's DefBuckets (5 ms to 10 s, go-grpc-middleware's
// default) below which erpc adds 10 µs to 2.5 ms, where its calls take
// place.
var DefBuckets = []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Option configures NewStatsHandler.
type Option func(*config)

type config struct {
	histogram   bool
	buckets     []float64
	constLabels prometheus.Labels
}

// WithHandlingTimeHistogram adds the histograms grpc_server_handling_seconds
// and grpc_client_handling_seconds, off by default as in
// go-grpc-middleware (a histogram costs a series per bucket per method).
// With no buckets given, DefBuckets.
func WithHandlingTimeHistogram(buckets ...float64) Option {
	return func(c *config) {
		c.histogram = true
		c.buckets = buckets
	}
}

// WithConstLabels adds labels with fixed values to every metric: to tell
// apart, in one registry, the handlers of several endpoints.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) { c.constLabels = labels }
}

// numCodes is the number of erpc codes with a name (OK to Unauthenticated).
const numCodes = int(erpc.Unauthenticated) + 1

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

// StatsHandler is an erpc.StatsHandler that counts calls and sessions,
// and a prometheus.Collector that exports the counts: register it, and
// install it with erpc.WithStatsHandler on the endpoints to watch (one
// handler may watch any number, clients and servers). See the package
// documentation for the metrics.
type StatsHandler struct {
	calls [2]callMetrics // by side

	retransmits     *prometheus.CounterVec
	sessionsOpen    [2]prometheus.Gauge
	sessionsOpened  [2]prometheus.Counter
	sessionFailures [2]*prometheus.CounterVec
	tracker         sessionTracker

	// entries holds each method's metrics, resolved once: it is replaced,
	// never changed.
	entries atomic.Pointer[map[entryKey]*entry]
	mu      sync.Mutex // held to replace entries
}

// callMetrics are one side's call metrics, go-grpc-middleware's.
type callMetrics struct {
	started, handled, received, sent *prometheus.CounterVec
	handling                         *prometheus.HistogramVec // nil if off
}

var (
	_ erpc.StatsHandler    = (*StatsHandler)(nil)
	_ prometheus.Collector = (*StatsHandler)(nil)
)

// NewStatsHandler returns a StatsHandler; register it (say with
// prometheus.MustRegister) to export its metrics.
func NewStatsHandler(opts ...Option) *StatsHandler {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if len(c.buckets) == 0 {
		c.buckets = DefBuckets
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: c.constLabels}, labels)
	}
	labels := []string{"grpc_type", "grpc_service", "grpc_method"}
	withCode := append(labels[:3:3], "grpc_code")
	h := &StatsHandler{}
	for _, s := range []struct {
		side                    int
		name, who               string
		handling, opened, fails string
	}{{
		sideServer, "server", "on the server",
		"handled by the server", "clients opened to the server",
		"clients opened to the server that ended with an error",
	}, {
		sideClient, "client", "by the client",
		"until the client had the response", "the client dialed",
		"the client dialed that failed to open or ended with an error",
	}} {
		m := &h.calls[s.side]
		m.started = counter("grpc_"+s.name+"_started_total", "Total number of RPCs started "+s.who+".", labels...)
		m.handled = counter("grpc_"+s.name+"_handled_total", "Total number of RPCs completed "+s.who+", regardless of success or failure.", withCode...)
		m.received = counter("grpc_"+s.name+"_msg_received_total", "Total number of RPC messages received "+s.who+".", labels...)
		m.sent = counter("grpc_"+s.name+"_msg_sent_total", "Total number of RPC messages sent "+s.who+".", labels...)
		if c.histogram {
			m.handling = prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:        "grpc_" + s.name + "_handling_seconds",
				Help:        "Histogram of response latency (seconds) of RPCs " + s.handling + ".",
				Buckets:     c.buckets,
				ConstLabels: c.constLabels,
			}, labels)
		}
		h.sessionsOpen[s.side] = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "erpc_" + s.name + "_sessions_open", Help: "Open sessions that " + s.opened + ".",
			ConstLabels: c.constLabels,
		})
		h.sessionsOpened[s.side] = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "erpc_" + s.name + "_sessions_opened_total", Help: "Total number of sessions that " + s.opened + ".",
			ConstLabels: c.constLabels,
		})
		h.sessionFailures[s.side] = counter("erpc_"+s.name+"_session_failures_total",
			"Total number of sessions "+s.fails+", by the error's code.", "grpc_code")
	}
	h.retransmits = counter("erpc_client_retransmissions_total", "Total number of request packets the client sent again, lost or late the first time.", labels...)
	empty := map[entryKey]*entry{}
	h.entries.Store(&empty)
	return h
}

// SplitMethod splits an erpc method name into the grpc_service and
// grpc_method labels' values: "/pkg.Service/Method" (a generated stub's)
// into "pkg.Service" and "Method" (at the last slash), and a name without
// a service, "Echo", into "" and "Echo".
func SplitMethod(name string) (service, method string) {
	name = strings.TrimPrefix(name, "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// codeLabel is grpc_code's value: the code's name, which is gRPC's
// (codes.Code.String): "OK", "NotFound", "Canceled"...
func codeLabel(c erpc.Code) string {
	if int(c) < numCodes {
		return c.String()
	}
	return strconv.Itoa(int(c))
}

type entryKey struct {
	method string
	server bool
}

// entry is a method's metrics on one side, resolved.
type entry struct {
	service, method         string
	started, received, sent prometheus.Counter
	handling                prometheus.Observer // nil if off
	retransmits             prometheus.Counter  // a client's
	handled                 [numCodes]atomic.Pointer[prometheus.Counter]
	handledVec              *prometheus.CounterVec
}

func (h *StatsHandler) entry(method string, server bool) *entry {
	k := entryKey{method, server}
	if e := (*h.entries.Load())[k]; e != nil {
		return e
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := *h.entries.Load()
	if e := m[k]; e != nil {
		return e
	}
	e := h.newEntry(k)
	next := make(map[entryKey]*entry, len(m)+1)
	maps.Copy(next, m)
	next[k] = e
	h.entries.Store(&next)
	return e
}

func (h *StatsHandler) newEntry(k entryKey) *entry {
	e := &entry{}
	e.service, e.method = SplitMethod(k.method)
	m := &h.calls[side(k.server)]
	e.started = m.started.WithLabelValues("unary", e.service, e.method)
	e.received = m.received.WithLabelValues("unary", e.service, e.method)
	e.sent = m.sent.WithLabelValues("unary", e.service, e.method)
	if m.handling != nil {
		e.handling = m.handling.WithLabelValues("unary", e.service, e.method)
	}
	if !k.server {
		e.retransmits = h.retransmits.WithLabelValues("unary", e.service, e.method)
	}
	e.handledVec = m.handled
	return e
}

// handledCounter is grpc_*_handled_total's series for code.
func (e *entry) handledCounter(code erpc.Code) prometheus.Counter {
	if int(code) >= numCodes {
		return e.handledVec.WithLabelValues("unary", e.service, e.method, codeLabel(code))
	}
	if c := e.handled[code].Load(); c != nil {
		return *c
	}
	c := e.handledVec.WithLabelValues("unary", e.service, e.method, codeLabel(code))
	e.handled[code].Store(&c) // racing stores store the same series
	return c
}

// CallBegin counts a call started, and its request message (sent by a
// client, received by a server).
func (h *StatsHandler) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	e := h.entry(info.Method, info.Server)
	e.started.Inc()
	if info.Server {
		e.received.Inc()
	} else {
		e.sent.Inc()
	}
	return ctx
}

// CallEnd counts a call handled with its code, and its response message
// (counted, as go-grpc-middleware counts a unary call's, whether or not
// the call succeeded); observes its duration if the histogram is on; and
// counts a client's retransmissions.
func (h *StatsHandler) CallEnd(_ context.Context, info erpc.CallInfo, end erpc.CallEnd) {
	e := h.entry(info.Method, info.Server)
	if info.Server {
		e.sent.Inc()
	} else {
		e.received.Inc()
		if end.Retransmits > 0 {
			e.retransmits.Add(float64(end.Retransmits))
		}
	}
	e.handledCounter(end.Code).Inc()
	if e.handling != nil {
		e.handling.Observe(end.Duration.Seconds())
	}
}

// SessionEvent counts sessions opened, open, and failed.
func (h *StatsHandler) SessionEvent(ev erpc.SessionEvent) {
	server, delta := h.tracker.update(ev)
	s := side(server)
	if delta != 0 {
		h.sessionsOpen[s].Add(float64(delta))
	}
	if ev.Up {
		h.sessionsOpened[s].Inc()
	} else if ev.Err != nil {
		h.sessionFailures[s].WithLabelValues(codeLabel(erpc.CodeOf(ev.Err))).Inc()
	}
}

// InitializeMetrics makes, at zero, the series of every method server
// serves, so that they exist before the first call (as
// go-grpc-middleware's InitializeMetrics does): grpc_server_started_total,
// grpc_server_msg_received_total, grpc_server_msg_sent_total and (if on)
// grpc_server_handling_seconds per method, grpc_server_handled_total per
// method and code. Call it once the server has its handlers.
func (h *StatsHandler) InitializeMetrics(server *erpc.Server) {
	for _, name := range server.Methods() {
		e := h.entry(name, true)
		for c := range numCodes {
			e.handledCounter(erpc.Code(c))
		}
	}
}

// Describe implements prometheus.Collector.
func (h *StatsHandler) Describe(ch chan<- *prometheus.Desc) {
	h.each(func(c prometheus.Collector) { c.Describe(ch) })
}

// Collect implements prometheus.Collector.
func (h *StatsHandler) Collect(ch chan<- prometheus.Metric) {
	h.each(func(c prometheus.Collector) { c.Collect(ch) })
}

func (h *StatsHandler) each(f func(prometheus.Collector)) {
	for _, m := range h.calls {
		f(m.started)
		f(m.handled)
		f(m.received)
		f(m.sent)
		if m.handling != nil {
			f(m.handling)
		}
	}
	f(h.retransmits)
	for s := range 2 {
		f(h.sessionsOpen[s])
		f(h.sessionsOpened[s])
		f(h.sessionFailures[s])
	}
}
