package proto

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// TestResponseFlagCarried: the response flag a driver gives RespondFlags
// reaches the client's EventResponse (Meta), on answers of any size and
// status over a lossy, duplicating, reordering link; every response
// packet carries it, and an answer given without it carries none.
func TestResponseFlagCarried(t *testing.T) {
	link := simnet.LinkConfig{Delay: 10 * time.Microsecond, Loss: 0.15, Dup: 0.05, Reorder: 0.1, ReorderDelay: 50 * time.Microsecond}
	w := newWorld(t, 7, link)
	srv := w.addHost("server", "10.0.0.1:1", Config{Random: seedRandom(1)})
	cli := w.addHost("client", "10.0.0.2:1", Config{Random: seedRandom(2)})
	// The request's first byte says how to answer: bit 0 with the flag,
	// bits 1-2 the status.
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		d := ev.Req.Data()
		var flags wire.Flags
		if d[0]&1 != 0 {
			flags = wire.FlagMetadata | wire.FlagPending // the engine's own flags are ignored
		}
		if err := srv.e.RespondFlags(0, ev.Req, d[0]>>1&3, d, flags); err != nil {
			panic(err)
		}
	}
	flagged, bare := 0, 0
	w.onSend = func(from, to netip.AddrPort, head, payload []byte) {
		var h wire.Header
		if _, err := h.Parse(head); err != nil || h.Type != wire.TypeResp {
			return
		}
		if h.Flags&wire.FlagPending != 0 {
			t.Errorf("a response packet carries FlagPending")
		}
		if h.Flags&wire.FlagMetadata != 0 {
			flagged++
		} else {
			bare++
		}
	}
	got := collect(cli)
	sid := cli.e.Connect(w.now, srv.addr)
	rng := rand.New(rand.NewPCG(7, 7))
	want := map[CallID][]byte{}
	for i := range 200 {
		n := 1 + rng.IntN(3*1432)
		req := make([]byte, n)
		for j := range req {
			req[j] = byte(rng.Uint32())
		}
		id, err := cli.e.StartCall(w.now, sid, 7, req, nil, Never, i)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = req
	}
	w.runUntil(600_000*ms, func() bool { return len(got.done) == len(want) })
	for id, req := range want {
		ev, ok := got.done[id]
		if !ok || ev.Err != nil || !bytes.Equal(ev.Data, req) {
			t.Fatalf("call %d: done %v, err %v", id, ok, ev.Err)
		}
		if ev.Meta != (req[0]&1 != 0) || ev.Status != req[0]>>1&3 {
			t.Fatalf("call %d: Meta %v status %d, want %v %d", id, ev.Meta, ev.Status, req[0]&1 != 0, req[0]>>1&3)
		}
	}
	if flagged == 0 || bare == 0 {
		t.Fatalf("response packets: %d flagged, %d bare; want some of each", flagged, bare)
	}
	t.Logf("%d flagged and %d bare response packets, client %+v", flagged, bare, cli.e.Stats())
}

// TestClientTable_ResponseFlagMustAgree: a response packet whose
// FlagMetadata disagrees with the response's first packet is dropped as
// malformed (the blocks' presence, like the status, is one per message),
// and the agreeing packet completes the call with Meta set.
func TestClientTable_ResponseFlagMustAgree(t *testing.T) {
	tc := newTClient(t, Config{})
	resp := bytes.Repeat([]byte{2}, tDPP+1)
	tc.call("send", []byte("ping"), []out{{Type: wire.TypeReq, ReqNum: 0, Seq: 2, MsgSize: 4, Len: 4}})
	tc.now += 20_000
	tc.step("response packet 0, flagged: ask for packet 1", tc.srv(wire.TypeResp, wire.FlagMetadata, 0, 0, 0, 2, len(resp), resp[:tDPP]),
		[]out{{Type: wire.TypeRFR, Idx: 1, Seq: 3}})
	before := tc.e.Stats().DropMalformed
	tc.step("packet 1 without the flag: dropped", tc.srv(wire.TypeResp, 0, 0, 0, 1, 3, len(resp), resp[tDPP:]), nil)
	if tc.e.Stats().DropMalformed != before+1 {
		t.Fatalf("the disagreeing packet was not counted malformed: %+v", tc.e.Stats())
	}
	id := CallID(1)
	tc.step("packet 1 flagged", tc.srv(wire.TypeResp, wire.FlagMetadata, 0, 0, 1, 3, len(resp), resp[tDPP:]), nil, "response")
	if ev := tc.done[id]; ev.Err != nil || !ev.Meta || !bytes.Equal(ev.Data, resp) {
		t.Fatalf("completion %+v", ev)
	}
}
