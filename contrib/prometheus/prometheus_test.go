package prometheus_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	erpcprom "github.com/erpc-go/erpc/contrib/prometheus"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var names atomic.Int64

// memName is an address on the process's in-memory network no other test
// uses.
func memName(t testing.TB) string {
	return fmt.Sprintf("mem://%s-%d", strings.NewReplacer("/", "-").Replace(t.Name()), names.Add(1))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rig is a server and a client, each with its handler, registered in reg.
type rig struct {
	reg        *prometheus.Registry
	srvH, cliH *erpcprom.StatsHandler
	srv        *erpc.Server
	ep         *erpc.Endpoint
	sess       *erpc.Session
	served     chan struct{}
}

func newRig(t *testing.T, init bool, opts ...erpcprom.Option) *rig {
	t.Helper()
	r := &rig{reg: prometheus.NewRegistry(), served: make(chan struct{}, 16)}
	r.srvH = erpcprom.NewStatsHandler(append(opts, erpcprom.WithConstLabels(prometheus.Labels{"end": "server"}))...)
	r.cliH = erpcprom.NewStatsHandler(append(opts, erpcprom.WithConstLabels(prometheus.Labels{"end": "client"}))...)
	must(t, r.reg.Register(r.srvH))
	must(t, r.reg.Register(r.cliH))
	r.srv = erpc.NewServer()
	must(t, r.srv.Handle("/test.Echo/Say", func(_ context.Context, req []byte) ([]byte, error) {
		r.served <- struct{}{}
		return req, nil
	}))
	must(t, r.srv.Handle("/test.Echo/Find", func(context.Context, []byte) ([]byte, error) {
		r.served <- struct{}{}
		return nil, erpc.Errorf(erpc.NotFound, "no such thing")
	}))
	must(t, r.srv.Handle("Ping", func(_ context.Context, req []byte) ([]byte, error) {
		r.served <- struct{}{}
		return req, nil
	}))
	if init {
		r.srvH.InitializeMetrics(r.srv)
	}
	addr := memName(t)
	var err error
	r.ep, err = r.srv.Listen(addr, erpc.WithStatsHandler(r.srvH))
	must(t, err)
	t.Cleanup(func() { r.ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.sess, err = erpc.Dial(ctx, addr, erpc.WithStatsHandler(r.cliH))
	must(t, err)
	t.Cleanup(func() { r.sess.Close() })
	return r
}

// series are gathered metrics by name and labels ("k=v,k=v" sorted).
type series map[string]*dto.Metric

func gather(t *testing.T, reg *prometheus.Registry) series {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	out := series{}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			var ls []string
			for _, l := range m.Label {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = m
		}
	}
	return out
}

func key(name, end string, kv ...string) string {
	ls := []string{"end=" + end}
	for i := 0; i < len(kv); i += 2 {
		ls = append(ls, kv[i]+"="+kv[i+1])
	}
	sort.Strings(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

func (s series) value(t *testing.T, k string) float64 {
	t.Helper()
	m := s[k]
	if m == nil {
		var ks []string
		for k := range s {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		t.Fatalf("no series %s; have:\n%s", k, strings.Join(ks, "\n"))
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", k)
	return 0
}

// calls makes 2 Say calls, 1 Find call (NotFound) and 1 Ping call, and
// waits for the server to have counted them.
func (r *rig) calls(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		_, err := r.sess.Call(ctx, "/test.Echo/Say", []byte("hi"), nil)
		must(t, err)
	}
	if _, err := r.sess.Call(ctx, "/test.Echo/Find", nil, nil); erpc.CodeOf(err) != erpc.NotFound {
		t.Fatalf("Find: %v", err)
	}
	_, err := r.sess.Call(ctx, "Ping", nil, nil)
	must(t, err)
	// The server counts a call handled just after its response leaves.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := gather(t, r.reg)
		if m := s[key("grpc_server_handled_total", "server", "grpc_type", "unary", "grpc_service", "", "grpc_method", "Ping", "grpc_code", "OK")]; m != nil && m.Counter.GetValue() == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not count Ping handled")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCounters: started, handled per code, and messages each way, on both
// sides, with go-grpc-middleware's names and labels.
func TestCounters(t *testing.T) {
	r := newRig(t, false)
	r.calls(t)
	s := gather(t, r.reg)
	for _, end := range []string{"server", "client"} {
		say := []string{"grpc_type", "unary", "grpc_service", "test.Echo", "grpc_method", "Say"}
		find := []string{"grpc_type", "unary", "grpc_service", "test.Echo", "grpc_method", "Find"}
		ping := []string{"grpc_type", "unary", "grpc_service", "", "grpc_method", "Ping"}
		for _, c := range []struct {
			name string
			kv   []string
			want float64
		}{
			{"started_total", say, 2},
			{"started_total", find, 1},
			{"started_total", ping, 1},
			{"handled_total", append(say, "grpc_code", "OK"), 2},
			{"handled_total", append(find, "grpc_code", "NotFound"), 1},
			{"handled_total", append(ping, "grpc_code", "OK"), 1},
			{"msg_received_total", say, 2},
			{"msg_sent_total", say, 2},
			{"msg_received_total", find, 1},
			{"msg_sent_total", find, 1},
		} {
			k := key("grpc_"+end+"_"+c.name, end, c.kv...)
			if v := s.value(t, k); v != c.want {
				t.Errorf("%s = %g, want %g", k, v, c.want)
			}
		}
		if _, ok := s[key("grpc_"+end+"_handled_total", end, append(find, "grpc_code", "OK")...)]; ok {
			t.Errorf("%s: a series for a code no call ended with", end)
		}
		if _, ok := s[key("grpc_"+end+"_handling_seconds", end, say...)]; ok {
			t.Errorf("%s: a histogram, which is off by default", end)
		}
	}
	// erpc's own: the client's retransmissions (a series per method, at
	// 0 unless the loaded machine made the client resend), sessions.
	s.value(t, key("erpc_client_retransmissions_total", "client", "grpc_type", "unary", "grpc_service", "test.Echo", "grpc_method", "Say"))
	for _, c := range []struct{ name, end string }{
		{"erpc_server_sessions_open", "server"}, {"erpc_server_sessions_opened_total", "server"},
		{"erpc_client_sessions_open", "client"}, {"erpc_client_sessions_opened_total", "client"},
	} {
		if v := s.value(t, key(c.name, c.end)); v != 1 {
			t.Errorf("%s = %g, want 1", c.name, v)
		}
	}
	for _, c := range []struct{ name, end string }{{"erpc_server_sessions_open", "client"}, {"erpc_client_sessions_open", "server"}} {
		if v := s.value(t, key(c.name, c.end)); v != 0 {
			t.Errorf("the %s's %s = %g, want 0", c.end, c.name, v)
		}
	}
	r.sess.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := gather(t, r.reg)
		cli, srv := s.value(t, key("erpc_client_sessions_open", "client")), s.value(t, key("erpc_server_sessions_open", "server"))
		if cli == 0 && srv == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close: %g client and %g server sessions open", cli, srv)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHistogram: WithHandlingTimeHistogram adds the handling time
// histograms, in seconds.
func TestHistogram(t *testing.T) {
	r := newRig(t, false, erpcprom.WithHandlingTimeHistogram())
	start := time.Now()
	r.calls(t)
	elapsed := time.Since(start).Seconds()
	s := gather(t, r.reg)
	for _, end := range []string{"server", "client"} {
		k := key("grpc_"+end+"_handling_seconds", end, "grpc_type", "unary", "grpc_service", "test.Echo", "grpc_method", "Say")
		m := s[k]
		if m == nil || m.Histogram == nil {
			t.Fatalf("no histogram %s", k)
		}
		h := m.Histogram
		if h.GetSampleCount() != 2 || h.GetSampleSum() <= 0 || h.GetSampleSum() > elapsed {
			t.Errorf("%s: count %d sum %gs, want 2 and 0 < sum <= %gs", k, h.GetSampleCount(), h.GetSampleSum(), elapsed)
		}
		if b := h.GetBucket(); len(b) != len(erpcprom.DefBuckets) || b[0].GetUpperBound() != erpcprom.DefBuckets[0] {
			t.Errorf("%s: buckets %v", k, b)
		}
	}
	r2 := newRig(t, false, erpcprom.WithHandlingTimeHistogram(0.001, 0.1))
	r2.calls(t)
	k := key("grpc_server_handling_seconds", "server", "grpc_type", "unary", "grpc_service", "", "grpc_method", "Ping")
	if m := gather(t, r2.reg)[k]; m == nil || len(m.Histogram.GetBucket()) != 2 {
		t.Errorf("%s with buckets 0.001, 0.1: %v", k, m)
	}
}

// TestInitializeMetrics: every method the server serves has its series at
// zero before any call, with one handled series per code.
func TestInitializeMetrics(t *testing.T) {
	r := newRig(t, true, erpcprom.WithHandlingTimeHistogram())
	s := gather(t, r.reg)
	methods := [][2]string{{"test.Echo", "Say"}, {"test.Echo", "Find"}, {"", "Ping"}}
	for _, m := range methods {
		kv := []string{"grpc_type", "unary", "grpc_service", m[0], "grpc_method", m[1]}
		for _, name := range []string{"grpc_server_started_total", "grpc_server_msg_received_total", "grpc_server_msg_sent_total"} {
			if v := s.value(t, key(name, "server", kv...)); v != 0 {
				t.Errorf("%s %v = %g", name, m, v)
			}
		}
		if h := s[key("grpc_server_handling_seconds", "server", kv...)]; h == nil || h.Histogram.GetSampleCount() != 0 {
			t.Errorf("histogram %v: %v", m, h)
		}
		for c := erpc.OK; c <= erpc.Unauthenticated; c++ {
			if v := s.value(t, key("grpc_server_handled_total", "server", append(kv, "grpc_code", c.String())...)); v != 0 {
				t.Errorf("handled %v %s = %g", m, c, v)
			}
		}
	}
	n := 0
	for k := range s {
		if strings.HasPrefix(k, "grpc_server_handled_total{") {
			n++
		}
	}
	if want := len(methods) * 17; n != want {
		t.Errorf("%d handled series, want %d", n, want)
	}
	r.calls(t)
	s = gather(t, r.reg)
	if v := s.value(t, key("grpc_server_handled_total", "server", "grpc_type", "unary", "grpc_service", "test.Echo", "grpc_method", "Say", "grpc_code", "OK")); v != 2 {
		t.Errorf("after the calls, Say OK = %g", v)
	}
}

// TestSplitMethod: grpc_service and grpc_method from erpc names.
func TestSplitMethod(t *testing.T) {
	for _, c := range []struct{ in, service, method string }{
		{"/pkg.Service/Method", "pkg.Service", "Method"},
		{"pkg.Service/Method", "pkg.Service", "Method"},
		{"Echo", "", "Echo"},
		{"/Echo", "", "Echo"},
		{"/a/b/C", "a/b", "C"},
		{"", "", ""},
	} {
		if s, m := erpcprom.SplitMethod(c.in); s != c.service || m != c.method {
			t.Errorf("SplitMethod(%q) = %q, %q; want %q, %q", c.in, s, m, c.service, c.method)
		}
	}
}

// TestSessionFailures: a client whose server went away counts the
// session's failure by its code.
func TestSessionFailures(t *testing.T) {
	r := newRig(t, false)
	r.ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := r.sess.Call(ctx, "Ping", nil, nil); err == nil {
		t.Fatal("a call to a closed server succeeded")
	}
	s := gather(t, r.reg)
	if v := s.value(t, key("grpc_client_handled_total", "client", "grpc_type", "unary", "grpc_service", "", "grpc_method", "Ping", "grpc_code", "DeadlineExceeded")); v != 1 {
		t.Errorf("handled DeadlineExceeded = %g", v)
	}
	// The client hears the server went away: its session ends with an
	// error.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := gather(t, r.reg)
		if f := failures(s); len(f) > 0 && s.value(t, key("erpc_client_sessions_open", "client")) == 0 {
			t.Logf("session failures: %v", f)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session failure counted: %v", failures(s))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func failures(s series) []string {
	var out []string
	for k, m := range s {
		if strings.HasPrefix(k, "erpc_client_session_failures_total{") {
			out = append(out, fmt.Sprintf("%s=%g", k, m.Counter.GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

// TestRetransmissions: over a lossy network, the client counts the request
// packets it sent again.
func TestRetransmissions(t *testing.T) {
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	srvTr, err := n.Listen("server")
	must(t, err)
	cliTr, err := n.Listen("client")
	must(t, err)
	n.SetLink(cliTr.LocalAddr(), srvTr.LocalAddr(), memnet.LinkConfig{Loss: 0.5})
	reg := prometheus.NewRegistry()
	h := erpcprom.NewStatsHandler()
	reg.MustRegister(h)
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
	before := cli.Stats().Retransmits // the handshake's
	for range 10 {
		_, err := sess.Call(ctx, "Ping", []byte("x"), nil)
		must(t, err)
	}
	got := gather(t, reg)[`erpc_client_retransmissions_total{grpc_method=Ping,grpc_service=,grpc_type=unary}`]
	if got == nil {
		t.Fatal("no retransmissions series")
	}
	v, total := got.Counter.GetValue(), cli.Stats().Retransmits-before
	t.Logf("%g retransmissions counted; the endpoint made %d", v, total)
	if v == 0 || v > float64(total) {
		t.Errorf("%g retransmissions counted; the endpoint made %d", v, total)
	}
}
