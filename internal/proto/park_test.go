package proto

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// TestParkedRequestsOffTheBudget (r): requests the server parks (Park:
// they wait for an event, as a stream's exchange waits for output) do not
// count against MaxHeldRequests, whatever their number: beside more
// parked requests than the limit, on many sessions, every other request
// is taken, never refused (NACK). They stay held (Stats.HeldRequests,
// their bytes) until answered or their session ends, and then none is
// left, parked or not. Before Park, the parked ones filled the limit and
// the server refused the rest.
func TestParkedRequestsOffTheBudget(t *testing.T) {
	const limit, parkType, workType = 4, 1, 2
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		w := newWorld(t, seed, simnet.LinkConfig{Delay: 10 * time.Microsecond, Reorder: 0.1, ReorderDelay: 20 * time.Microsecond})
		srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(seed + 1), MaxHeldRequests: limit})
		cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(seed + 2)})
		ps := parkServer(srv, parkType)
		got := collect(cli)
		sessions := 2 + rng.IntN(3)
		var sids []SessionID
		for range sessions {
			sids = append(sids, cli.e.Connect(w.now, srv.addr))
		}
		w.runUntil(1000*ms, func() bool { return len(got.up) == sessions })
		// One at a time: a request counts in full until parked, from its
		// arrival to its handler's Park.
		total := limit + 1 + rng.IntN(4) // beyond the limit; at most 4 a session, which leaves slots for work
		for i := range total {
			if _, err := cli.e.StartCall(w.now, sids[i%sessions], parkType, []byte("wait"), nil, Never, nil); err != nil {
				t.Fatal(err)
			}
			w.runUntil(w.now+1000*ms, func() bool { return len(ps.parked)+len(got.done) > i })
		}
		for _, ev := range got.done {
			t.Fatalf("seed %d: a parked call completed: %v", seed, ev.Err)
		}
		st := srv.e.Stats()
		if st.HeldRequests != total || st.ParkedRequests != total {
			t.Fatalf("seed %d: %d parked: held %d, parked %d", seed, total, st.HeldRequests, st.ParkedRequests)
		}
		// Work beside them: never refused, on every session.
		work := map[CallID]bool{}
		for i := range 3 * limit {
			id, err := cli.e.StartCall(w.now, sids[i%sessions], workType, []byte("work"), nil, Never, nil)
			if err != nil {
				t.Fatal(err)
			}
			work[id] = true
		}
		w.runUntil(w.now+1000*ms, func() bool { return doneAll(got, work) })
		for id := range work {
			if err := got.done[id].Err; err != nil {
				t.Fatalf("seed %d: a call beside %d parked requests (limit %d): %v", seed, total, limit, err)
			}
		}
		// Some parked ones answered, the rest go with their session.
		rng.Shuffle(len(ps.parked), func(i, j int) { ps.parked[i], ps.parked[j] = ps.parked[j], ps.parked[i] })
		answered := rng.IntN(len(ps.parked) + 1)
		for _, h := range ps.parked[:answered] {
			if err := srv.e.Respond(w.now, h, 0, nil); err != nil {
				t.Fatalf("seed %d: answer a parked request: %v", seed, err)
			}
		}
		for _, sid := range sids {
			cli.e.Close(w.now, sid)
		}
		w.runUntil(w.now+60_000*ms, func() bool { return srv.e.Stats().ServerSessions == 0 })
		// The driver answers what its session's end orphaned: that
		// releases them (ErrRequestGone).
		for _, h := range ps.parked[answered:] {
			if err := srv.e.Respond(w.now, h, 0, nil); !errors.Is(err, ErrRequestGone) {
				t.Fatalf("seed %d: answer a parked request after its session ended: %v, want ErrRequestGone", seed, err)
			}
		}
		if st := srv.e.Stats(); st.HeldRequests != 0 || st.ParkedRequests != 0 {
			t.Fatalf("seed %d: after every session closed: held %d, parked %d", seed, st.HeldRequests, st.ParkedRequests)
		}
	}
}

// TestParkRefusesStale: Park of a request already answered (a stale
// handle) fails and counts nothing.
func TestParkRefusesStale(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 10 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
	cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
	var parkErr error
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequest {
			h := ev.Req
			if err := srv.e.Respond(0, h, 0, nil); err != nil {
				panic(err)
			}
			parkErr = srv.e.Park(h)
		}
	}
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	id, err := cli.e.StartCall(w.now, sid, 1, nil, nil, Never, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.runUntil(1000*ms, func() bool { return doneAll(got, map[CallID]bool{id: true}) })
	if !errors.Is(parkErr, ErrStaleRequest) {
		t.Fatalf("Park of an answered request: %v, want ErrStaleRequest", parkErr)
	}
	if st := srv.e.Stats(); st.ParkedRequests != 0 || st.HeldRequests != 0 {
		t.Fatalf("after the answer: held %d, parked %d", st.HeldRequests, st.ParkedRequests)
	}
}

func doneAll(c *collector, ids map[CallID]bool) bool {
	for id := range ids {
		if _, ok := c.done[id]; !ok {
			return false
		}
	}
	return true
}

// parkingServer is a server that parks every request of type parkType
// (and records it) and answers every other at once.
type parkingServer struct {
	parked []ReqHandle
	kept   int // parked requests whose message outlived their Park
}

func parkServer(srv *host, parkType uint32) *parkingServer {
	ps := &parkingServer{}
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		if ev.Req.Type() == parkType {
			if err := srv.e.Park(ev.Req); err != nil {
				panic(err)
			}
			if ev.Req.Data() != nil {
				ps.kept++
			}
			ps.parked = append(ps.parked, ev.Req)
			return
		}
		if err := srv.e.Respond(0, ev.Req, 0, nil); err != nil {
			panic(err)
		}
	}
	return ps
}
