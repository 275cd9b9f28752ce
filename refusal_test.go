package erpc_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// restartable is a server on a memnet address that can be stopped and
// started again there (one Server serves every incarnation).
type restartable struct {
	t    *testing.T
	n    *memNet
	srv  *erpc.Server
	opts []erpc.Option
	addr string
	ep   *erpc.Endpoint
}

func newRestartable(t *testing.T, n *memNet, srv *erpc.Server, opts ...erpc.Option) *restartable {
	r := &restartable{t: t, n: n, srv: srv, opts: opts}
	r.ep = n.Listen(t, srv, opts...)
	r.addr = r.ep.Addr().String()
	return r
}

// restart closes the endpoint (which tells its clients) and opens a new
// one at the same address.
func (r *restartable) restart() {
	r.t.Helper()
	r.ep.Close()
	tr, err := r.n.net.Listen(r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.ep = listenT(r.t, r.srv, "", append(r.opts, erpc.WithTransport(tr))...)
}

// waitSessions waits until the client and server endpoints hold the given
// numbers of sessions.
func waitSessions(t *testing.T, cli, srv *erpc.Endpoint, client, server int) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(time.Millisecond) {
		c, s := cli.Stats().ClientSessions, srv.Stats().ServerSessions
		if c == client && s == server {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("client holds %d sessions, server %d; want %d and %d", c, s, client, server)
		}
	}
}

const refusalMax = 4 << 10 // the server's message limit in these tests

// TestOversizeCallDuringReconnect: a call larger than the server's limit,
// made while its session reconnects (so the client learns the limit only
// when the new session is up), fails with InvalidArgument and leaves that
// session attached: afterwards the client and the server each hold one
// session, and calls succeed on it. Before, the refusal read as "the
// session ended": the client detached the live session, never closed on
// either end, and dialed another.
func TestOversizeCallDuringReconnect(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := newRestartable(t, n, serverWith(t, "Echo", echoHandler), erpc.WithMaxMessageSize(refusalMax))
	cli := n.Listen(t, nil)
	s, err := cli.Dial(context.Background(), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := make([]byte, 2*refusalMax)
	for round := range 3 {
		srv.restart()
		waitSessions(t, cli, srv.ep, 0, 0) // the old server told us: the next call reconnects
		if _, err := call(t, s, "Echo", big); erpc.CodeOf(err) != erpc.InvalidArgument {
			t.Fatalf("round %d: oversize call: %v, want InvalidArgument", round, err)
		}
		waitSessions(t, cli, srv.ep, 1, 1)
		if resp, err := call(t, s, "Echo", []byte("ok")); err != nil || string(resp) != "ok" {
			t.Fatalf("round %d: call after the refusal: %q %v", round, resp, err)
		}
		waitSessions(t, cli, srv.ep, 1, 1)
	}
}

// TestRefusalsDuringReconnectsLeakNoSession: rounds of random mixes of
// oversize and normal calls, sent together while the session reconnects
// after a server restart. Oversize calls fail with InvalidArgument,
// normal ones succeed or fail with Unavailable, and at the end the client
// and the server each hold exactly one session, which serves calls.
func TestRefusalsDuringReconnectsLeakNoSession(t *testing.T) {
	checkLeaks(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	n := newMemNet()
	srv := newRestartable(t, n, serverWith(t, "Echo", echoHandler), erpc.WithMaxMessageSize(refusalMax))
	cli := n.Listen(t, nil)
	s, err := cli.Dial(context.Background(), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refused := 0
	for round := range 6 {
		srv.restart()
		if rng.IntN(2) == 0 { // else some calls find the old session still attached
			waitSessions(t, cli, srv.ep, 0, 0)
		}
		k := 1 + rng.IntN(12)
		sizes := make([]int, k)
		for i := range sizes {
			sizes[i] = rng.IntN(refusalMax) + 1
			if rng.IntN(2) == 0 {
				sizes[i] += refusalMax
			}
		}
		errs := make([]error, k)
		var wg sync.WaitGroup
		for i, size := range sizes {
			wg.Go(func() { _, errs[i] = call(t, s, "Echo", make([]byte, size)) })
		}
		wg.Wait()
		for i, size := range sizes {
			switch code := erpc.CodeOf(errs[i]); {
			case size > refusalMax && code == erpc.InvalidArgument:
				refused++
			case size <= refusalMax && (code == erpc.OK || code == erpc.Unavailable):
			default:
				t.Fatalf("round %d: call of %d bytes: %v", round, size, errs[i])
			}
		}
	}
	if refused == 0 {
		t.Fatal("no oversize call was refused: the test attacked nothing")
	}
	if _, err := call(t, s, "Echo", []byte("last")); err != nil {
		t.Fatalf("call after the rounds: %v", err)
	}
	waitSessions(t, cli, srv.ep, 1, 1)
	t.Logf("%d oversize calls refused", refused)
}
