package erpc

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// statsCall is one call of a StatsHandler method, as exitStats's filter
// sees it: cb names the method ("CallBegin", "CallEnd", "SessionEvent").
type statsCall struct {
	cb   string
	info CallInfo
	end  CallEnd
	ev   SessionEvent
}

// exitStats is a StatsHandler that ends its goroutine with runtime.Goexit
// (as t.FailNow does) in the calls its filter picks, at most left times,
// and counts the Goexits it made.
type exitStats struct {
	when    func(statsCall) bool
	left    atomic.Int64
	exits   atomic.Int64
	lastGID atomic.Uint64 // the goroutine of the last Goexit
}

func newExitStats(budget int64, when func(statsCall) bool) *exitStats {
	s := &exitStats{when: when}
	s.left.Store(budget)
	return s
}

func (s *exitStats) maybeExit(c statsCall) {
	if !s.when(c) || s.left.Add(-1) < 0 {
		return
	}
	s.exits.Add(1)
	s.lastGID.Store(goroutineID())
	runtime.Goexit()
}

func (s *exitStats) CallBegin(ctx context.Context, info CallInfo) context.Context {
	s.maybeExit(statsCall{cb: "CallBegin", info: info})
	return ctx
}

func (s *exitStats) CallEnd(_ context.Context, info CallInfo, end CallEnd) {
	s.maybeExit(statsCall{cb: "CallEnd", info: info, end: end})
}

func (s *exitStats) SessionEvent(ev SessionEvent) {
	s.maybeExit(statsCall{cb: "SessionEvent", ev: ev})
}

// logRecords is a slog.Handler that keeps every record's message.
type logRecords struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}

// count is how many messages contain s.
func (h *logRecords) count(s string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if strings.Contains(m, s) {
			n++
		}
	}
	return n
}

// checkGoexitsLogged: each Goexit the stats made was logged once, naming
// the StatsHandler method.
func checkGoexitsLogged(t *testing.T, logs *logRecords, cb string, exits int64) {
	t.Helper()
	want := "StatsHandler." + cb + " called runtime.Goexit"
	if got := logs.count(want); int64(got) != exits {
		t.Errorf("%d log records say %q, want one per Goexit: %d", got, want, exits)
	}
}

// statsPair is a client endpoint with a session to a server endpoint over
// an in-memory network. Neither is closed at cleanup: a test whose loop
// died would hang there; the tests close them with closeWithin.
type statsPair struct {
	net      *memnet.Network
	sep, cep *Endpoint
	sess     *Session
	logs     *logRecords // both endpoints'
}

func newStatsPair(t *testing.T, srv *Server, sopts, copts []Option) *statsPair {
	t.Helper()
	p := listenStatsPair(t, srv, sopts, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if p.sess, err = p.cep.Dial(ctx, p.sep.Target()); err != nil {
		t.Fatal(err)
	}
	return p
}

// listenStatsPair is newStatsPair without the session.
func listenStatsPair(t *testing.T, srv *Server, sopts, copts []Option) *statsPair {
	t.Helper()
	p := &statsPair{net: memnet.NewNetwork(1, memnet.LinkConfig{}), logs: &logRecords{}}
	logger := WithLogger(slog.New(p.logs))
	str, err := p.net.Listen("srv")
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := p.net.Listen("cli")
	if err != nil {
		t.Fatal(err)
	}
	if p.sep, err = srv.Listen("", append([]Option{WithTransport(str), logger}, sopts...)...); err != nil {
		t.Fatal(err)
	}
	if p.cep, err = NewServer().Listen("", append([]Option{WithTransport(ctr), logger}, copts...)...); err != nil {
		t.Fatal(err)
	}
	return p
}

// callWithin makes a blocking call that must complete within 5 s.
func (p *statsPair) callWithin(t *testing.T, method string, req []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := p.sess.Call(ctx, method, req, nil)
	if CodeOf(err) == DeadlineExceeded {
		t.Fatalf("call %q did not complete within 5 s (the loop is dead?): %v", method, err)
	}
	return resp, err
}

// checkLoopAlive: after stats Goexits, ep's loop runs Post functions on a
// goroutine that is the loop (its identity checks pass there) and is not
// the one that exited.
func checkLoopAlive(t *testing.T, ep *Endpoint, st *exitStats) {
	t.Helper()
	type seen struct {
		onLoop bool
		gid    uint64
	}
	got := make(chan seen, 1)
	if err := ep.Post(func() { got <- seen{ep.onLoop(), goroutineID()} }); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if !s.onLoop {
			t.Errorf("a Post function after the Goexit is not on the loop by the loop's own check")
		}
		if s.gid == st.lastGID.Load() {
			t.Errorf("the loop runs on the goroutine that exited (%d)", s.gid)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a Post function has not run 10 s after a StatsHandler Goexit: the loop is dead")
	}
}
