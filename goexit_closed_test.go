package erpc_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

type goStats struct {
	exitBegin atomic.Bool
	begins    atomic.Int64
	ends      atomic.Int64
	endsNoBeg atomic.Int64
}

type goStatsKey struct{}

func (s *goStats) CallBegin(ctx context.Context, info erpc.CallInfo) context.Context {
	if info.Server {
		return ctx
	}
	s.begins.Add(1)
	if s.exitBegin.Load() {
		runtime.Goexit()
	}
	return context.WithValue(ctx, goStatsKey{}, true)
}
func (s *goStats) CallEnd(ctx context.Context, info erpc.CallInfo, _ erpc.CallEnd) {
	if info.Server {
		return
	}
	s.ends.Add(1)
	if ctx.Value(goStatsKey{}) == nil {
		s.endsNoBeg.Add(1)
	}
}
func (s *goStats) SessionEvent(erpc.SessionEvent) {}

// TestGoexitInCallBeginAfterClose: Session.Go on an endpoint already
// closed, with a StatsHandler whose CallBegin calls runtime.Goexit: the
// call is not reported (it never began), and its continuation runs.
func TestGoexitInCallBeginAfterClose(t *testing.T) {
	n := newMemNet()
	sep := n.Listen(t, serverWith(t, "Echo", echoHandler))
	st := &goStats{}
	cli := n.Listen(t, nil, erpc.WithStatsHandler(st))
	sess := dialT(t, n, cli, sep)
	cli.Close()
	st.exitBegin.Store(true)
	done := make(chan error, 2)
	goDone := make(chan struct{})
	go func() {
		defer close(goDone)
		sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) { done <- err })
	}()
	<-goDone
	select {
	case err := <-done:
		t.Logf("continuation ran: %v", err)
	case <-time.After(3 * time.Second):
		t.Errorf("the continuation never ran (CallBegin begins %d, Goexit on the Go caller's goroutine cut erpc's finishStopped short)", st.begins.Load())
	}
}

// TestSessionGoStatsOnce: many Session.Go calls racing Close; each gets
// its continuation exactly once, and CallBegin and CallEnd together or
// not at all (a Go made once the endpoint closed is not reported), CallEnd
// always with CallBegin's context.
func TestSessionGoStatsOnce(t *testing.T) {
	for iter := 0; iter < 20; iter++ {
		n := newMemNet()
		sep := n.Listen(t, serverWith(t, "Echo", echoHandler))
		st := &goStats{}
		cli := n.Listen(t, nil, erpc.WithStatsHandler(st))
		sess := dialT(t, n, cli, sep)
		const calls = 200
		var conts atomic.Int64
		all := make(chan struct{})
		for i := 0; i < calls; i++ {
			if i == calls/2 {
				go cli.Close()
			}
			sess.Go("Echo", []byte("x"), nil, func(_ []byte, err error) {
				if conts.Add(1) == calls {
					close(all)
				}
			})
		}
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			t.Fatalf("iter %d: %d of %d continuations ran", iter, conts.Load(), calls)
		}
		time.Sleep(10 * time.Millisecond)
		if conts.Load() != calls || st.begins.Load() != st.ends.Load() || st.begins.Load() > calls || st.endsNoBeg.Load() != 0 {
			t.Fatalf("iter %d: conts %d begins %d ends %d endsWithoutBeginCtx %d (want %d continuations, begins = ends, 0)", iter, conts.Load(), st.begins.Load(), st.ends.Load(), st.endsNoBeg.Load(), calls)
		}
	}
}
