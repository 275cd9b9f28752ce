package erpc_test

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// revExitStats ends its goroutine (runtime.Goexit) in the client-side
// CallBegin calls for method whose number (1-based, counting that
// method's client-side CallBegins) is in exitAt.
type revExitStats struct {
	method string
	exitAt map[int64]bool
	n      atomic.Int64
	exits  atomic.Int64
}

func (s *revExitStats) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	if !info.Server && info.Method == s.method && s.exitAt[s.n.Add(1)] {
		s.exits.Add(1)
		runtime.Goexit()
	}
	return ctx
}
func (s *revExitStats) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd) {}
func (s *revExitStats) SessionEvent(erpc.SessionEvent)                       {}

type revLogs struct {
	mu   sync.Mutex
	msgs []string
}

func (h *revLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *revLogs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *revLogs) WithGroup(string) slog.Handler            { return h }
func (h *revLogs) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *revLogs) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.msgs, "\n")
}

// TestGoexitInRetryCallBegin: a Client.Go call whose first replica
// refuses it as never run (no such method there) is placed again by the
// Client from its continuation, on the loop: that attempt's Session.Go
// calls the StatsHandler's CallBegin on the loop. The CallBegin ends its
// goroutine (runtime.Goexit). StatsHandler doc: the loop goes on, the
// Goexit is logged naming the method; the call's done must still run
// once (exactly-once of continuations).
func TestGoexitInRetryCallBegin(t *testing.T) {
	net := newMemNet()
	var addrs []string
	for range 2 {
		s := erpc.NewServer()
		must(t, s.Handle("Other", echoHandler))
		addrs = append(addrs, net.Listen(t, s).Addr().String())
	}
	name := newFleetName()
	testResolver.set(name, addrs...)
	st := &revExitStats{method: "M", exitAt: map[int64]bool{2: true}}
	logs := &revLogs{}
	ep := net.Listen(t, nil, erpc.WithFailureTimeout(300*time.Millisecond), erpc.WithStatsHandler(st), erpc.WithLogger(slog.New(logs)))
	c, err := ep.NewClient("fleettest:///" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitReplicas(t, c, erpc.ReplicaReady, 2)
	done := make(chan error, 2)
	c.Go("M", []byte("x"), nil, func(_ []byte, err error) { done <- err })
	select {
	case err := <-done:
		t.Logf("done ran: %v", err)
	case <-time.After(5 * time.Second):
		t.Errorf("Client.Go's done never ran (5 s) after the StatsHandler's CallBegin of its second attempt, on the loop, called runtime.Goexit (exits: %d); log:\n%s", st.exits.Load(), logs.all())
	}
	// the loop goes on?
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := c.Call(ctx, "Other", []byte("y"), nil); err != nil || !bytes.Equal(resp, []byte("y")) {
		t.Errorf("a later call: %v", err)
	}
	if !strings.Contains(logs.all(), "StatsHandler.CallBegin") {
		t.Errorf("no log names StatsHandler.CallBegin; log:\n%s", logs.all())
	}
	var inflight int64
	for _, r := range c.Replicas() {
		inflight += r.InFlight
	}
	if inflight != 0 {
		t.Errorf("the replicas count %d calls in flight with none left (the lost attempt's)", inflight)
	}
}

// TestGoexitInStreamExchangeCallBegin: the client's loop sends a
// session's stream exchanges with Session.Go (stream_pump.go), which
// calls the StatsHandler's CallBegin on the loop. One such CallBegin
// ends its goroutine (runtime.Goexit). StatsHandler doc: only that
// goroutine ends, logged naming the method, the loop goes on and later
// calls complete: the stream's messages must all still arrive.
func TestGoexitInStreamExchangeCallBegin(t *testing.T) {
	for _, at := range []int64{1, 2, 3, 5} {
		t.Run("", func(t *testing.T) {
			srv := echoStreamServer(t)
			net := newMemNet()
			sep := net.Listen(t, srv)
			st := &revExitStats{method: "erpc.stream/exchange", exitAt: map[int64]bool{at: true}}
			logs := &revLogs{}
			cep := net.Listen(t, nil, erpc.WithStatsHandler(st), erpc.WithLogger(slog.New(logs)))
			sess := dialT(t, net, cep, sep)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			type opened struct {
				s   erpc.ClientStream
				err error
			}
			got := make(chan opened, 1)
			go func() {
				s, err := sess.NewStream(ctx, "Echo")
				got <- opened{s, err}
			}()
			var s erpc.ClientStream
			select {
			case o := <-got:
				if o.err != nil {
					t.Fatalf("exit at exchange %d: NewStream: %v", at, o.err)
				}
				s = o.s
			case <-time.After(5 * time.Second):
				t.Fatalf("exit at exchange %d (exits %d): NewStream with a 2 s context has not returned in 5 s; log:\n%s", at, st.exits.Load(), logs.all())
			}
			for i := range 50 {
				if err := s.Send(seqMsg(uint64(i), 64)); err != nil {
					t.Fatalf("exit at exchange %d: Send %d: %v", at, i, err)
				}
				m, err := s.Recv()
				if err != nil {
					t.Fatalf("exit at exchange %d (exits %d): Recv %d: %v; log:\n%s", at, st.exits.Load(), i, err, logs.all())
				}
				if !bytes.Equal(m, seqMsg(uint64(i), 64)) {
					t.Fatalf("message %d wrong", i)
				}
			}
			s.CloseSend()
			if st.exits.Load() != 1 {
				t.Fatalf("exits: %d", st.exits.Load())
			}
			if !strings.Contains(logs.all(), "StatsHandler.CallBegin") {
				t.Errorf("exit at exchange %d: no log names StatsHandler.CallBegin; log:\n%s", at, logs.all())
			}
		})
	}
}
