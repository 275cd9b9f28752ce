package proto

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

func TestClientTable_NackAndReset(t *testing.T) {
	tc := newTClient(t, Config{})
	a := tc.call("a", []byte("a"), []out{{Type: wire.TypeReq, Seq: 2, MsgSize: 1, Len: 1}})
	tc.step("nack", tc.srv(wire.TypeNack, 0, wire.CodeServerFull, 0, 0, 2, 0, nil), nil, "response")
	if ev := tc.done[a]; !errors.Is(ev.Err, ErrOverloaded) || ev.Status != wire.CodeServerFull {
		t.Fatalf("nacked call: %+v", ev)
	}
	big := tc.call("big", []byte("b"), []out{{Type: wire.TypeReq, ReqNum: 8, Seq: 3, MsgSize: 1, Len: 1}})
	tooLarge := pkt(wire.Header{Type: wire.TypeNack, Code: wire.CodeMsgTooLarge, Session: tc.sid.Num(), Token: tc.token,
		ReqNum: 8, TxSeq: 3, MsgSize: 1000}, nil)
	tc.step("nack: too large for the server", tooLarge, nil, "response")
	var size *SizeError
	if ev := tc.done[big]; !errors.Is(ev.Err, ErrMsgTooLarge) || errors.Is(ev.Err, ErrOverloaded) || !errors.As(ev.Err, &size) || size.Max != 1000 {
		t.Fatalf("call refused as too large: %+v", ev)
	}
	b := tc.call("b", []byte("b"), []out{{Type: wire.TypeReq, ReqNum: 16, Seq: 4, MsgSize: 1, Len: 1}})
	other := pkt(wire.Header{Type: wire.TypeReset, Code: wire.CodeUnknownSession, Session: tSrvNum, Token: tc.token}, nil)
	tc.step("a reset naming another token is not ours", other, nil)
	// A reset must echo a packet still outstanding: the answered request
	// 0 (seq 2), or the right seq with another request number, is not.
	for _, echo := range []struct {
		seq uint32
		req uint64
	}{{2, 0}, {4, 8}, {5, 16}} {
		stale := pkt(wire.Header{Type: wire.TypeReset, Code: wire.CodeUnknownSession, Session: tSrvNum, Token: tSrvTok,
			TxSeq: echo.seq, ReqNum: echo.req}, nil)
		tc.step(fmt.Sprintf("a reset echoing seq %d request %d, not outstanding, is not believed", echo.seq, echo.req), stale, nil)
	}
	reset := pkt(wire.Header{Type: wire.TypeReset, Code: wire.CodeUnknownSession, Session: tSrvNum, Token: tSrvTok,
		TxSeq: 4, ReqNum: 16}, nil)
	tc.step("reset", reset, nil, "response", "session-down")
	if ev := tc.done[b]; !errors.Is(ev.Err, ErrSessionReset) {
		t.Fatalf("call on reset session: %+v", ev)
	}
	if _, err := tc.e.StartCall(tc.now, tc.sid, 1, nil, nil, Never, nil); !errors.Is(err, ErrNoSession) {
		t.Fatalf("call after reset: %v", err)
	}
}

// TestClientTable_ResetProvesNotRun: a reset says how long the server has
// had no such session. A request every packet of which left later than
// that never reached a live session: its call completes with
// ErrNotExecuted (the endpoint sends it again on a new session), even if
// it was retransmitted meanwhile. A request with a packet sent earlier may
// have run before the session ended: its call just fails.
func TestClientTable_ResetProvesNotRun(t *testing.T) {
	for _, tt := range []struct {
		name    string
		since   time.Duration // what the reset says
		notRun  bool
		resends int // retransmissions before the reset
	}{
		{"server restarted before the first send", 5 * time.Millisecond, true, 1},
		{"same, no retransmission", 5 * time.Millisecond, true, 0},
		{"session ended after the first send", 500 * time.Microsecond, false, 1},
		{"ended exactly at the first send: not proven", 1020 * time.Microsecond, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tc := newTClient(t, Config{MinRTO: time.Millisecond})
			a := tc.call("send", []byte("a"), []out{{Type: wire.TypeReq, Seq: 2, MsgSize: 1, Len: 1}})
			for i := range tt.resends {
				tc.tick("retransmitted at the RTO", time.Millisecond<<i,
					[]out{{Type: wire.TypeReq, Seq: uint32(3 + i), MsgSize: 1, Len: 1}})
			}
			tc.now = tc.now.Add(1020*time.Microsecond - time.Duration(tt.resends)*time.Millisecond)
			reset := pkt(wire.Header{Type: wire.TypeReset, Code: wire.CodeUnknownSession, Session: tSrvNum, Token: tSrvTok,
				TxSeq: uint32(2 + tt.resends), MsgSize: uint32(tt.since / time.Microsecond)}, nil)
			tc.step("reset", reset, nil, "response", "session-down")
			ev := tc.done[a]
			if !errors.Is(ev.Err, ErrSessionReset) || errors.Is(ev.Err, ErrNotExecuted) != tt.notRun {
				t.Fatalf("call: %v; want not-executed %v", ev.Err, tt.notRun)
			}
		})
	}
}

// TestClientTable_ClosingReset: a server that closes a session says the
// lowest request number it never saw; calls at or above it never ran. The
// notice carries the client's token: one without it is dropped.
func TestClientTable_ClosingReset(t *testing.T) {
	tc := newTClient(t, Config{})
	seen := tc.call("seen", []byte("a"), []out{{Type: wire.TypeReq, ReqNum: 0, Seq: 2, MsgSize: 1, Len: 1}})
	unseen := tc.call("unseen", []byte("b"), []out{{Type: wire.TypeReq, ReqNum: 1, Seq: 3, MsgSize: 1, Len: 1}})
	forged := pkt(wire.Header{Type: wire.TypeReset, Code: wire.CodeServerClosing, Session: tSrvNum, Token: tSrvTok, ReqNum: 0,
		MsgSize: tc.token ^ 1}, nil)
	tc.step("a closing notice without our token is not believed", forged, nil)
	closing := pkt(wire.Header{Type: wire.TypeReset, Code: wire.CodeServerClosing, Session: tSrvNum, Token: tSrvTok, ReqNum: 1,
		MsgSize: tc.token}, nil)
	tc.step("the server closes the session", closing, nil, "response", "response", "session-down")
	if ev := tc.done[seen]; !errors.Is(ev.Err, ErrServerClosed) || errors.Is(ev.Err, ErrNotExecuted) {
		t.Fatalf("a call the server saw: %v", ev.Err)
	}
	if ev := tc.done[unseen]; !errors.Is(ev.Err, ErrServerClosed) || !errors.Is(ev.Err, ErrNotExecuted) {
		t.Fatalf("a call the server never saw: %v", ev.Err)
	}
}
