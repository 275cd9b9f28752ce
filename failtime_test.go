package erpc_test

import (
	"errors"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestSilentServerFailsWithinFailureTimeout: a server that stops answering
// (its links cut both ways, as kill -STOP does) fails a call in flight, and
// every new call after it, with Unavailable within one failure timeout of
// the call: a connect that timed out is not tried again for the same call
// (that doubled the time). Once the server answers again (restarted on the
// same address) the session reaches it.
func TestSilentServerFailsWithinFailureTimeout(t *testing.T) {
	checkLeaks(t)
	const failure = 400 * time.Millisecond // long enough that a loaded host's delays stay well inside the bound
	const bound = failure * 3 / 2          // correctness bound: one timeout, not two
	n := newMemNet()
	srv := newRestartable(t, n, serverWith(t, "Echo", echoHandler))
	cli := n.Listen(t, nil, erpc.WithFailureTimeout(failure))
	s := dialT(t, n, cli, srv.ep)
	if _, err := call(t, s, "Echo", []byte("up")); err != nil {
		t.Fatal(err)
	}
	silence := func(down bool) {
		n.net.SetLink(srv.ep.Addr(), cli.Addr(), memnet.LinkConfig{Down: down})
		n.net.SetLink(cli.Addr(), srv.ep.Addr(), memnet.LinkConfig{Down: down})
	}
	silence(true)
	connectTimeouts := 0
	for i := range 4 { // the first is on the live session; the rest reconnect
		time.Sleep(100 * time.Millisecond) // past the reconnect backoff, so each call connects
		start := time.Now()
		_, err := call(t, s, "Echo", []byte("into the void"))
		took := time.Since(start)
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("call %d to a silent server: %v; want Unavailable", i, err)
		}
		if took > bound {
			t.Errorf("call %d to a silent server failed after %v; failure timeout %v (bound %v): %v", i, took, failure, bound, err)
		}
		if i > 0 && erpc.NotExecuted(err) && took >= failure/2 {
			connectTimeouts++ // it waited for a connect, which timed out
		}
		t.Logf("call %d: %v after %v", i, err, took)
	}
	if connectTimeouts == 0 {
		t.Fatal("no new call waited for a connect to time out: the test did not attack what it says")
	}
	silence(false)
	srv.restart()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := call(t, s, "Echo", []byte("back"))
		if err == nil {
			break
		}
		if !erpc.NotExecuted(err) || time.Now().After(deadline) {
			t.Fatalf("after the server came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // backing off after the failures
	}
}

// TestClosedServerFailsWithinFailureTimeout: a server whose endpoint
// closed (it tells its clients) fails every new call within one failure
// timeout too, whatever the next connect meets.
func TestClosedServerFailsWithinFailureTimeout(t *testing.T) {
	checkLeaks(t)
	const failure = 400 * time.Millisecond // long enough that a loaded host's delays stay well inside the bound
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Echo", echoHandler))
	cli := n.Listen(t, nil, erpc.WithFailureTimeout(failure))
	s := dialT(t, n, cli, srv)
	if _, err := call(t, s, "Echo", []byte("up")); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	waitSessions(t, cli, srv, 0, 0)
	for i := range 3 {
		time.Sleep(100 * time.Millisecond) // past the reconnect backoff
		start := time.Now()
		_, err := call(t, s, "Echo", []byte("gone"))
		if took := time.Since(start); !erpc.NotExecuted(err) || took > failure*3/2 {
			t.Errorf("call %d to a closed server: %v after %v; want Unavailable, never ran, within %v", i, err, took, failure*3/2)
		}
	}
}
