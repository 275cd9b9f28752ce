package proto

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

const ms = Time(time.Millisecond)

// echoServer answers every request with its own data, inline: the slot
// takes the request's buffer over.
func echoServer(h *host) {
	h.onEvent = func(ev Event) {
		if ev.Type == EventRequest {
			if err := h.e.Respond(0, ev.Req, 0, ev.Req.Data()); err != nil {
				panic(err)
			}
		}
	}
}

// collector records a client's completions by call.
type collector struct {
	done   map[CallID]Event
	up     []SessionID
	down   map[SessionID]error
	events []Event
}

func collect(h *host) *collector {
	c := &collector{done: make(map[CallID]Event), down: make(map[SessionID]error)}
	h.onEvent = func(ev Event) {
		c.events = append(c.events, ev)
		switch ev.Type {
		case EventResponse:
			if _, dup := c.done[ev.Call]; dup {
				panic("call completed twice")
			}
			c.done[ev.Call] = ev
		case EventSessionUp:
			c.up = append(c.up, ev.Session)
		case EventSessionDown:
			c.down[ev.Session] = ev.Err
		}
	}
	return c
}

func TestEchoSizes(t *testing.T) {
	for _, link := range []simnet.LinkConfig{
		{Delay: 10 * time.Microsecond},
		{Delay: 10 * time.Microsecond, Loss: 0.2, Dup: 0.05, Reorder: 0.1, ReorderDelay: 50 * time.Microsecond},
	} {
		w := newWorld(t, 1, link)
		srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
		cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
		echoServer(srv)
		got := collect(cli)
		sid := cli.e.Connect(w.now, srv.addr)
		sizes := []int{0, 1, 32, 1432, 1433, 5000, 64 << 10, 1 << 20}
		want := map[CallID][]byte{}
		for i, n := range sizes {
			req := bytes.Repeat([]byte{byte(i + 1)}, n)
			id, err := cli.e.StartCall(w.now, sid, 7, req, nil, Never, i)
			if err != nil {
				t.Fatal(err)
			}
			want[id] = req
		}
		w.runUntil(60_000*ms, func() bool { return len(got.done) == len(sizes) })
		for id, req := range want {
			ev := got.done[id]
			if ev.Err != nil || !bytes.Equal(ev.Data, req) {
				t.Fatalf("loss %v: call %d (size %d): err %v, %d bytes back", link.Loss, id, len(req), ev.Err, len(ev.Data))
			}
		}
		st := cli.e.Stats()
		if st.PendingCalls != 0 || st.BusySlots != 0 || st.CreditsInUse != 0 {
			t.Fatalf("client leaks: %+v", st)
		}
		if s := srv.e.Stats(); s.HeldRequests != 0 || s.HeldBytes != s.SavedBytes {
			t.Fatalf("server leaks: %+v", s)
		}
		// The saved responses go once the session does.
		cli.e.Close(w.now, sid)
		w.runUntil(w.now+60_000*ms, func() bool { return srv.e.Stats().ServerSessions == 0 })
		if s := srv.e.Stats(); s.HeldBytes != 0 || s.SavedBytes != 0 {
			t.Fatalf("server holds memory after the session closed: %+v", s)
		}
		t.Logf("loss %.2f: %d steps, %v simulated, client %+v", link.Loss, w.steps, time.Duration(w.now), st)
	}
}

func TestConnectTimeout(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Down: true})
	cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
	got := collect(cli)
	sid := cli.e.Connect(w.now, addr("10.0.0.1:1"))
	id, err := cli.e.StartCall(w.now, sid, 1, []byte("x"), nil, Never, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.runUntil(10_000*ms, func() bool { return len(got.down) == 1 })
	if !errors.Is(got.down[sid], ErrConnectTimeout) {
		t.Fatalf("down with %v", got.down[sid])
	}
	if ev := got.done[id]; !errors.Is(ev.Err, ErrConnectTimeout) {
		t.Fatalf("call ended with %v", ev.Err)
	}
	if w.now > 2100*ms {
		t.Fatalf("gave up after %v, failure timeout is 2s", time.Duration(w.now))
	}
}
