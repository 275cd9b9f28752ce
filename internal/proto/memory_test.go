package proto

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// TestSavedResponsesBounded: the responses a server keeps for at-most-once
// count toward MaxHeldBytes, by capacity: once they fill it, the next
// request is refused at once; when their sessions end, the memory is back.
func TestSavedResponsesBounded(t *testing.T) {
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 10 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1), MaxHeldBytes: 1 << 20})
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequest {
			resp := srv.e.Buffer(300 << 10) // a 512 KiB buffer
			if err := srv.e.Respond(w.now, ev.Req, 0, resp); err != nil {
				t.Fatal(err)
			}
		}
	}
	var errs []error
	var sids []SessionID
	for i := range 3 {
		cli := w.addHost(fmt.Sprintf("client%d", i), fmt.Sprintf("10.0.1.%d:1", i+1), Config{Random: seedRandom(uint64(i + 2))})
		cli.onEvent = func(ev Event) {
			if ev.Type == EventResponse {
				errs = append(errs, ev.Err)
			}
		}
		sid := cli.e.Connect(w.now, srv.addr)
		sids = append(sids, sid)
		if _, err := cli.e.StartCall(w.now, sid, 1, []byte("x"), nil, Never, nil); err != nil {
			t.Fatal(err)
		}
		w.runUntil(w.now+Time(time.Second), func() bool { return len(errs) == i+1 })
	}
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrOverloaded) {
		t.Fatalf("calls: %v; want two answered and the third refused: two saved 512 KiB responses fill 1 MiB", errs)
	}
	if st := srv.e.Stats(); st.SavedBytes != 1<<20 || st.HeldBytes != 1<<20 || st.NacksSent != 1 {
		t.Fatalf("server %+v", st)
	}
	for i, sid := range sids {
		w.hosts[i+1].e.Close(w.now, sid)
	}
	w.runUntil(w.now+Time(time.Second), func() bool { return srv.e.Stats().ServerSessions == 0 })
	if st := srv.e.Stats(); st.HeldBytes != 0 || st.SavedBytes != 0 {
		t.Fatalf("after the sessions closed: %+v", st)
	}
}

// TestReleasedMemoryBounded: after a burst of concurrent 60 KiB requests,
// what the server keeps for reuse is within PoolBytes, measured on the
// heap, not only by its own count: nothing is kept per pooled request or
// per slot beyond it.
func TestReleasedMemoryBounded(t *testing.T) {
	const pool = 1 << 20
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 10 * time.Microsecond})
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1), PoolBytes: pool, Window: 64})
	var held []ReqHandle
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequest {
			held = append(held, ev.Req) // answered all at once, later
		}
	}
	done := 0
	cli := w.addHost("client", "10.0.1.1:1", Config{Random: seedRandom(2), Window: 64, Credits: 4096})
	cli.onEvent = func(ev Event) {
		if ev.Type == EventResponse {
			if ev.Err != nil {
				t.Fatal(ev.Err)
			}
			done++
		}
	}
	sid := cli.e.Connect(w.now, srv.addr)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n, size = 64, 60 << 10
	req := make([]byte, size)
	before := heap()
	for range n {
		if _, err := cli.e.StartCall(w.now, sid, 1, req, make([]byte, 0, 16), Never, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.runUntil(w.now+Time(time.Second), func() bool { return len(held) == n })
	for _, h := range held {
		if err := srv.e.Respond(w.now, h, 0, []byte("ok")); err != nil {
			t.Fatal(err)
		}
	}
	held = nil
	w.runUntil(w.now+Time(time.Second), func() bool { return done == n })
	st := srv.e.Stats()
	grew := int64(heap()) - int64(before)
	runtime.KeepAlive(w) // the engines must be live when the heap is measured
	t.Logf("after %d requests of %d KiB: heap grew %d KiB; pooled %d KiB (bound %d KiB)", n, size>>10, grew>>10, st.PooledBytes>>10, pool>>10)
	if st.PooledBytes > pool || st.HeldRequests != 0 {
		t.Fatalf("server %+v", st)
	}
	// The client keeps its 64 calls' state; the server its pool and small
	// saved responses. 4 MiB of request buffers must not stay.
	if grew > pool+(1<<20) {
		t.Fatalf("the heap grew by %d KiB and stayed: more than the %d KiB pool allows", grew>>10, pool>>10)
	}
}

// TestIdleSessionMemory measures what an idle server session costs: its
// state before it is confirmed (its slots come at confirmation) and,
// after one 32-byte call, with its slots and the response it keeps for
// at-most-once. It logs the figures the package doc quotes.
func TestIdleSessionMemory(t *testing.T) {
	const n = 2000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	e := New(Config{Random: seedRandom(1), MaxHalfOpen: n}) // none confirms
	now := Time(1000)
	type sess struct {
		num, tok uint32
		from     int
	}
	sessions := make([]sess, 0, n)
	addrOf := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 7)
	}
	before := heap()
	for i := range n {
		e.Receive(now, addrOf(i), connectPkt(uint32(i+1), 0, 8))
		var h wire.Header
		pkts := e.Outgoing(now)
		payload, _ := h.Parse(pkts[0].AppendTo(nil))
		var c wire.Connect
		c.Parse(payload)
		sessions = append(sessions, sess{c.Session, c.Token, i})
		for _, ok := e.NextEvent(); ok; _, ok = e.NextEvent() {
		}
	}
	idle := heap()
	for _, s := range sessions {
		req := pkt(wire.Header{Type: wire.TypeReq, Session: s.num, Token: s.tok, ReqType: 1, MsgSize: 32, TxSeq: 2}, make([]byte, 32))
		e.Receive(now, addrOf(s.from), req)
		for ev, ok := e.NextEvent(); ok; ev, ok = e.NextEvent() {
			if ev.Type == EventRequest {
				e.Respond(now, ev.Req, 0, ev.Req.Data())
			}
		}
		e.Outgoing(now)
	}
	called := heap()
	st := e.Stats()
	runtime.KeepAlive(e)
	perIdle := float64(idle-before) / n
	perCalled := float64(int64(called)-int64(before)) / n
	t.Logf("an idle server session: %.0f bytes; after one 32-byte call: %.0f bytes (saved responses %d B in all, pooled %d B)",
		perIdle, perCalled, st.SavedBytes, st.PooledBytes)
	if st.ServerSessions != n || st.SavedBytes != n*minClassBytes {
		t.Fatalf("server %+v", st)
	}
	if perIdle > 2048 || perCalled > 2048 {
		t.Fatalf("an idle session costs %.0f bytes (%.0f after a call): more than 2 KiB", perIdle, perCalled)
	}
}
