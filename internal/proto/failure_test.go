package proto

import (
	"errors"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// slowServer answers every request after delay (as a background handler
// would), unless the request was canceled meanwhile.
func slowServer(w *world, h *host, delay Time) *int {
	handled := new(int)
	h.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		*handled++
		req := ev.Req
		resp := append([]byte(nil), req.Data()...)
		w.at(w.now+delay, func() { _ = h.e.Respond(w.now, req, 0, resp) })
	}
	return handled
}

// TestServerDeathFailsPendingCalls: the server vanishes (a partition that
// never heals) while calls are in every state: request half sent, waiting
// for a slow handler, queued in the backlog. Each fails exactly once with
// ErrPeerTimeout, within the failure timeout of the last thing heard, and
// the server frees the session after its idle timeout.
func TestServerDeathFailsPendingCalls(t *testing.T) {
	const failure = 500 * time.Millisecond
	cfg := Config{FailureTimeout: failure, IdleTimeout: 2 * time.Second, KeepaliveInterval: 300 * time.Millisecond, Credits: 4}
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 20 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", cfg)
	cli := w.addHost("client", "10.0.0.2:1", cfg)
	slowServer(w, srv, 100*ms) // handlers outlive the partition
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	idle := cli.e.Connect(w.now, srv.addr) // a session with no calls at all
	w.runUntil(Time(time.Second), func() bool { return len(got.up) == 2 })

	sizes := []int{10, 200 << 10, 20, 30, 40, 50, 60, 70, 80, 90, 100} // > window: some wait in the backlog
	for _, n := range sizes {
		if _, err := cli.e.StartCall(w.now, sid, 1, make([]byte, n), nil, Never, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.runFor(ms) // small requests reach the server; the big one is partly sent
	cut := w.now
	w.net.SetDefault(simnet.LinkConfig{Down: true})

	// The busy session fails no later than FailureTimeout after the cut;
	// the idle one once its keepalive goes unanswered.
	w.runUntil(cut+Time(failure+time.Millisecond), func() bool { return len(got.done) == len(sizes) })
	w.runUntil(cut+Time(10*time.Second), func() bool { return len(got.down) == 2 })
	for id, ev := range got.done {
		if !errors.Is(ev.Err, ErrPeerTimeout) {
			t.Errorf("call %d ended with %v, want ErrPeerTimeout", id, ev.Err)
		}
	}
	if !errors.Is(got.down[sid], ErrPeerTimeout) || !errors.Is(got.down[idle], ErrPeerTimeout) {
		t.Fatalf("sessions down with %v and %v", got.down[sid], got.down[idle])
	}
	if st := cli.e.Stats(); st.ClientSessions != 0 || st.PendingCalls != 0 {
		t.Fatalf("client still holds state: %+v", st)
	}
	// The server reaps both sessions once they are idle past its timeout,
	// and releases the requests whose handlers were still running.
	w.runUntil(cut+Time(10*time.Second), func() bool {
		st := srv.e.Stats()
		return st.ServerSessions == 0 && st.HeldRequests == 0 && len(w.actions) == 0
	})
}

// TestFailureDetectedWithinTimeout pins when a call on a dead server fails:
// no later than FailureTimeout after the client last heard from it.
func TestFailureDetectedWithinTimeout(t *testing.T) {
	const failure = 300 * time.Millisecond
	cfg := Config{FailureTimeout: failure}
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 20 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", cfg)
	cli := w.addHost("client", "10.0.0.2:1", cfg)
	echoServer(srv)
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	w.runUntil(Time(time.Second), func() bool { return len(got.up) == 1 })
	w.net.SetDefault(simnet.LinkConfig{Down: true})
	lastHeard := w.now
	id, _ := cli.e.StartCall(w.now, sid, 1, []byte("hello"), nil, Never, nil)
	w.runUntil(Time(10*time.Second), func() bool { _, ok := got.done[id]; return ok })
	if !errors.Is(got.done[id].Err, ErrPeerTimeout) {
		t.Fatalf("call ended with %v", got.done[id].Err)
	}
	if d := w.now.Sub(lastHeard); d > failure+time.Millisecond || d < failure {
		t.Fatalf("failed %v after the last packet from the server, want %v", d, failure)
	}
}

// TestServerRestart: the server process restarts on the same address and
// forgets every session. Pending and new calls on the old session fail with
// ErrSessionReset (the new server answers them with a reset); a new
// session works.
func TestServerRestart(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 20 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{})
	cli := w.addHost("client", "10.0.0.2:1", Config{})
	echoServer(srv)
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	w.runUntil(Time(time.Second), func() bool { return len(got.up) == 1 })

	w.replace(srv, Config{})
	echoServer(srv)
	id, err := cli.e.StartCall(w.now, sid, 1, []byte("after restart"), nil, Never, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.runUntil(Time(time.Second), func() bool { return len(got.down) == 1 })
	if !errors.Is(got.done[id].Err, ErrSessionReset) || !errors.Is(got.down[sid], ErrSessionReset) {
		t.Fatalf("call: %v, session: %v; want ErrSessionReset", got.done[id].Err, got.down[sid])
	}
	if _, err := cli.e.StartCall(w.now, sid, 1, nil, nil, Never, nil); !errors.Is(err, ErrNoSession) {
		t.Fatalf("call on the dead session: %v", err)
	}
	sid2 := cli.e.Connect(w.now, srv.addr)
	id2, _ := cli.e.StartCall(w.now, sid2, 1, []byte("again"), nil, Never, nil)
	w.runUntil(Time(2*time.Second), func() bool { _, ok := got.done[id2]; return ok })
	if ev := got.done[id2]; ev.Err != nil || string(ev.Data) != "again" {
		t.Fatalf("new session: %q, %v", ev.Data, ev.Err)
	}
}

// TestClientRestart: a client restarts and connects from the same address
// with the same session number but a new token. The server drops the old
// incarnation at once, orphaning its running handler, and serves the new.
func TestClientRestart(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 20 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{})
	cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(1)})
	slowServer(w, srv, 50*ms)
	var srvEvents []Event
	inner := srv.onEvent
	srv.onEvent = func(ev Event) { srvEvents = append(srvEvents, ev); inner(ev) }
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	cli.e.StartCall(w.now, sid, 1, []byte("doomed"), nil, Never, nil)
	w.runFor(5 * ms) // the request is being handled

	w.replace(cli, Config{Random: seedRandom(2)})
	got = collect(cli)
	sid2 := cli.e.Connect(w.now, srv.addr)
	if sid2.Num() != sid.Num() || sid2.token() == sid.token() {
		t.Fatalf("want the same number with a new token: %x then %x", sid, sid2)
	}
	id, _ := cli.e.StartCall(w.now, sid2, 1, []byte("fresh"), nil, Never, nil)
	w.runUntil(Time(time.Second), func() bool { _, ok := got.done[id]; return ok && len(w.actions) == 0 })
	if ev := got.done[id]; ev.Err != nil || string(ev.Data) != "fresh" {
		t.Fatalf("call on the new incarnation: %q, %v", ev.Data, ev.Err)
	}
	var canceled, downReset bool
	for _, ev := range srvEvents {
		canceled = canceled || ev.Type == EventRequestCanceled
		downReset = downReset || (ev.Type == EventSessionDown && errors.Is(ev.Err, ErrSessionReset))
	}
	if !canceled || !downReset {
		t.Fatalf("server events %v: want the old session down (reset) and its request canceled", srvEvents)
	}
	if st := srv.e.Stats(); st.ServerSessions != 1 || st.HeldRequests != 0 {
		t.Fatalf("server state: %+v", st)
	}
}
