package proto

import (
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// TestParkedRequestsHoldNoBytes: a parked request gives its message back
// to the pool (the driver read it before parking), so that requests
// parked for good do not fill MaxHeldBytes: here two parked requests of
// 60 KB each at a MaxHeldBytes of 128 KiB, and calls of 60 KB beside them
// are all admitted. Their answer still releases them.
func TestParkedRequestsHoldNoBytes(t *testing.T) {
	const parkType, workType, size = 1, 2, 60_000
	w := newWorld(t, 3, simnet.LinkConfig{Delay: 10 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(3), MaxHeldBytes: 128 << 10})
	cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(4)})
	ps := parkServer(srv, parkType)
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	w.runUntil(1000*ms, func() bool { return len(got.up) == 1 })
	msg := make([]byte, size)
	for range 2 {
		if _, err := cli.e.StartCall(w.now, sid, parkType, msg, nil, Never, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.runUntil(w.now+1000*ms, func() bool { return len(ps.parked) == 2 })
	if st := srv.e.Stats(); st.ParkedRequests != 2 || st.HeldBytes != 0 || ps.kept != 0 {
		t.Fatalf("two parked: parked %d, held bytes %d, messages kept %d (want 2, 0, 0)", st.ParkedRequests, st.HeldBytes, ps.kept)
	}
	work := map[CallID]bool{}
	for range 4 {
		id, err := cli.e.StartCall(w.now, sid, workType, msg, nil, Never, nil)
		if err != nil {
			t.Fatal(err)
		}
		work[id] = true
		w.runUntil(w.now+1000*ms, func() bool { return doneAll(got, work) })
	}
	for id := range work {
		if err := got.done[id].Err; err != nil {
			t.Fatalf("a call of %d bytes beside two parked ones (MaxHeldBytes 128 KiB): %v", size, err)
		}
	}
	for _, h := range ps.parked {
		if err := srv.e.Respond(w.now, h, 0, []byte("out")); err != nil {
			t.Fatalf("answer a parked request: %v", err)
		}
	}
	w.runUntil(w.now+1000*ms, func() bool { return len(got.done) == 6 })
	if st := srv.e.Stats(); st.HeldRequests != 0 || st.ParkedRequests != 0 {
		t.Fatalf("after answering: held %d, parked %d", st.HeldRequests, st.ParkedRequests)
	}
}
