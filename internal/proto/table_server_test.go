package proto

import (
	"bytes"
	"errors"
	"testing"

	"github.com/erpc-go/erpc/internal/wire"
)

const (
	tToken   = 0xABCD1234
	tCliNum  = 7
	tDPP     = 1432
	tReqType = 42
)

// tserver is a server engine with one session from clientAddr, driven by
// hand-made packets.
type tserver struct {
	t     *testing.T
	e     *Engine
	num   uint32 // server's session number
	tok   uint32 // and its token, which client packets carry
	now   Time
	reqs  []ReqHandle // delivered requests, in order
	evs   []string
	evLog []Event
}

func newTServer(t *testing.T, cfg Config) *tserver {
	ts := &tserver{t: t, e: New(cfg), now: 1000}
	ts.num, ts.tok = ts.connect(tToken, tCliNum)
	checkEvents(t, "connect", ts.evs, "session-accepted")
	if ts.num != ts.evLog[0].Session.Num() {
		t.Fatalf("connect-ack names session %d, the event %d", ts.num, ts.evLog[0].Session.Num())
	}
	ts.evs, ts.evLog = nil, nil
	return ts
}

// connect sends a connect for the client session clientNum with token and
// returns the server session number and token its ack carries.
func (ts *tserver) connect(token, clientNum uint32) (num, tok uint32) {
	ts.t.Helper()
	ts.feed(connectPkt(token, clientNum, 8))
	names, evs := drainEvents(ts.e)
	ts.evs, ts.evLog = append(ts.evs, names...), append(ts.evLog, evs...)
	pkts := ts.e.Outgoing(ts.now)
	if len(pkts) != 1 {
		ts.t.Fatalf("connect answered with %d packets", len(pkts))
	}
	var h wire.Header
	payload, err := h.Parse(pkts[0].AppendTo(nil))
	var c wire.Connect
	if err != nil || h.Type != wire.TypeConnectAck || h.Code != wire.CodeOK || h.Token != token || c.Parse(payload) != nil || c.Token == 0 {
		ts.t.Fatalf("connect answered with %+v (%v), payload %+v", h, err, c)
	}
	return c.Session, c.Token
}

func connectPkt(token, clientNum uint32, window uint16) []byte {
	c := wire.Connect{Session: clientNum, Window: window, Credits: 32, MaxMsgSize: 8 << 20, MaxData: tDPP}
	var b [wire.ConnectLen]byte
	c.Put(b[:])
	return pkt(wire.Header{Type: wire.TypeConnect, Session: ^uint32(0), Token: token, TxSeq: 1}, b[:])
}

func (ts *tserver) feed(p []byte) { ts.e.Receive(ts.now, clientAddr, p) }

// flush collects events (remembering requests) and the packets sent.
func (ts *tserver) flush() []out {
	names, evs := drainEvents(ts.e)
	ts.evs = append(ts.evs, names...)
	ts.evLog = append(ts.evLog, evs...)
	for _, ev := range evs {
		if ev.Type == EventRequest {
			ts.reqs = append(ts.reqs, ev.Req)
		}
	}
	return ts.decodeOut(ts.e.Outgoing(ts.now))
}

func (ts *tserver) decodeOut(pkts []Packet) []out {
	return decode(ts.t, pkts, clientAddr, tCliNum, tToken)
}

// req is request packet idx of a size-byte request reqNum, sent with seq.
func (ts *tserver) req(reqNum uint64, size int, idx, seq uint32) []byte {
	lo, hi := dataRange(idx, size, tDPP)
	data := bytes.Repeat([]byte{byte(reqNum)}, hi-lo)
	return pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: ts.tok, ReqType: tReqType,
		MsgSize: uint32(size), PktIndex: idx, TxSeq: seq, ReqNum: reqNum}, data)
}

func (ts *tserver) ctl(t wire.Type, reqNum uint64, idx, seq uint32) []byte {
	return pkt(wire.Header{Type: t, Session: ts.num, Token: ts.tok, PktIndex: idx, TxSeq: seq, ReqNum: reqNum}, nil)
}

// step feeds p and checks what goes out and what fires.
func (ts *tserver) step(what string, p []byte, want []out, events ...string) {
	ts.t.Helper()
	ts.evs = nil
	ts.feed(p)
	checkOut(ts.t, what, ts.flush(), want)
	checkEvents(ts.t, what, ts.evs, events...)
}

func (ts *tserver) respond(h ReqHandle, resp []byte) []out {
	ts.t.Helper()
	if err := ts.e.Respond(ts.now, h, 0, resp); err != nil {
		ts.t.Fatalf("respond: %v", err)
	}
	return ts.flush()
}

func TestServerTable_Handshake(t *testing.T) {
	ts := newTServer(t, Config{})
	ts.step("duplicate connect, same token", connectPkt(tToken, tCliNum, 8),
		[]out{{Type: wire.TypeConnectAck, Flags: wire.FlagConfirm, Seq: 1, Len: wire.ConnectLen}})

	// A connect with the same client number and another token, as a forger
	// or a late copy from an earlier incarnation would send, makes a new
	// session and leaves the live one alone.
	ts.evs = nil
	num2, tok2 := ts.connect(tToken+1, tCliNum)
	checkEvents(t, "connect with another token", ts.evs, "session-accepted")
	if num2 == ts.num || tok2 == ts.tok {
		t.Fatalf("second session got the first's number %d or token %x", num2, tok2)
	}
	ts.step("the live session still serves", ts.ctl(wire.TypePing, 0, 0, 2), []out{{Type: wire.TypePong, Seq: 2}})
	if st := ts.e.Stats(); st.ServerSessions != 2 {
		t.Fatalf("%d server sessions, want both", st.ServerSessions)
	}
	// A packet with the new session's token proves the client there has
	// it: the client restarted (or reused its number), so the older
	// session of that number, silent since the newer's connect (here its
	// latest copy), ends. (One heard since would not: a NAT may have
	// handed the address to another client; see confirm.)
	ts.now++
	ts.feed(connectPkt(tToken+1, tCliNum, 8))
	ts.e.Outgoing(ts.now)
	newer := pkt(wire.Header{Type: wire.TypePing, Session: num2, Token: tok2, TxSeq: 3}, nil)
	ts.evs = nil
	ts.feed(newer)
	names, _ := drainEvents(ts.e)
	checkEvents(t, "the new session is confirmed", names, "session-down")
	checkOut(t, "pong from the new session", decode(t, ts.e.Outgoing(ts.now), clientAddr, tCliNum, tToken+1),
		[]out{{Type: wire.TypePong, Seq: 3}})
	if st := ts.e.Stats(); st.ServerSessions != 1 {
		t.Fatalf("%d server sessions after the confirmation, want 1", st.ServerSessions)
	}
	ts.feed(ts.ctl(wire.TypePing, 0, 0, 4))
	checkOut(t, "the old token is stale now", decode(t, ts.e.Outgoing(ts.now), clientAddr, ts.num, ts.tok),
		[]out{{Type: wire.TypeReset, Code: wire.CodeUnknownSession, Seq: 4}})

	ts.feed(connectPkt(tToken+2, tCliNum+1, 0)) // window 0
	checkOut(t, "bad params", decode(t, ts.e.Outgoing(ts.now), clientAddr, tCliNum+1, tToken+2),
		[]out{{Type: wire.TypeConnectAck, Code: wire.CodeBadParams, Seq: 1, Len: wire.ConnectLen}})

	// A table full of confirmed sessions refuses (a half-open one would
	// make it answer with a retry cookie: see TestConnectCookie).
	full := newTServer(t, Config{MaxSessions: 1})
	full.step("confirm", full.ctl(wire.TypePing, 0, 0, 2), []out{{Type: wire.TypePong, Seq: 2}})
	full.feed(connectPkt(tToken+3, tCliNum+2, 8))
	checkOut(t, "too many sessions", decode(t, full.e.Outgoing(full.now), clientAddr, tCliNum+2, tToken+3),
		[]out{{Type: wire.TypeConnectAck, Code: wire.CodeTooManySessions, Seq: 1, Len: wire.ConnectLen}})

	calls := New(Config{NotServing: true})
	calls.Receive(1, clientAddr, connectPkt(tToken, tCliNum, 8))
	checkOut(t, "an endpoint that serves nothing", decode(t, calls.Outgoing(1), clientAddr, tCliNum, tToken),
		[]out{{Type: wire.TypeConnectAck, Code: wire.CodeNotServing, Seq: 1, Len: wire.ConnectLen}})
}

func TestServerTable_SinglePacketRequest(t *testing.T) {
	ts := newTServer(t, Config{})
	// A complete request is delivered; its reply is owed until the round
	// ends, then answered "pending" because no handler responded.
	ts.step("new request, no response this round", ts.req(0, 5, 0, 10),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 0, Seq: 10}}, "request")
	h := ts.reqs[0]
	if string(h.Data()) != "\x00\x00\x00\x00\x00" || h.Type() != tReqType {
		t.Fatalf("request data %q type %d", h.Data(), h.Type())
	}
	ts.step("duplicate while handling", ts.req(0, 5, 0, 11),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 0, Seq: 11}})
	ts.step("probe while handling", ts.ctl(wire.TypeRFR, 0, 0, 12),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 0, Seq: 12}})
	// The late response echoes the completing packet's sequence number.
	checkOut(t, "respond later", ts.respond(h, []byte("pong")),
		[]out{{Type: wire.TypeResp, ReqNum: 0, Seq: 10, MsgSize: 4, Len: 4}})
	if h.Valid() || h.Data() != nil {
		t.Fatal("handle still valid after Respond")
	}
	if err := ts.e.Respond(ts.now, h, 0, nil); !errors.Is(err, ErrStaleRequest) {
		t.Fatalf("second Respond: %v", err)
	}
	ts.step("duplicate after response: stored response, handler not rerun", ts.req(0, 5, 0, 13),
		[]out{{Type: wire.TypeResp, ReqNum: 0, Seq: 13, MsgSize: 4, Len: 4}})
	ts.step("next number of the slot frees the old response", ts.req(8, 3, 0, 15),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 8, Seq: 15}}, "request")
	ts.step("a request older than the slot's is stale", ts.req(0, 5, 0, 16), nil)
	if st := ts.e.Stats(); st.DropStale != 1 || st.HeldRequests != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerTable_InlineResponse(t *testing.T) {
	ts := newTServer(t, Config{})
	ts.feed(ts.req(1, 3, 0, 20))
	names, evs := drainEvents(ts.e)
	checkEvents(t, "request", names, "request")
	// Respond inline, before the round ends: one packet, the response,
	// in the reserved place.
	buf := ts.e.Buffer(2)
	copy(buf, "ok")
	if err := ts.e.Respond(ts.now, evs[0].Req, 3, buf); err != nil {
		t.Fatal(err)
	}
	checkOut(t, "inline response", ts.decodeOut(ts.e.Outgoing(ts.now)),
		[]out{{Type: wire.TypeResp, Code: 3, ReqNum: 1, Seq: 20, MsgSize: 2, Len: 2}})
}

func TestServerTable_MultiPacket(t *testing.T) {
	ts := newTServer(t, Config{})
	const size = 2*tDPP + 100 // three packets
	ts.step("packet 2 first (reordered)", ts.req(2, size, 2, 31),
		[]out{{Type: wire.TypeCR, ReqNum: 2, Idx: 2, Seq: 31}})
	ts.step("packet 0", ts.req(2, size, 0, 32), []out{{Type: wire.TypeCR, ReqNum: 2, Idx: 0, Seq: 32}})
	ts.step("packet 0 again (duplicate)", ts.req(2, size, 0, 33), []out{{Type: wire.TypeCR, ReqNum: 2, Idx: 0, Seq: 33}})
	if st := ts.e.Stats(); st.HeldRequests != 1 || st.HeldBytes != classCap(size) {
		t.Fatalf("while reassembling: %+v", st)
	}
	ts.feed(ts.req(2, size, 1, 34))
	names, evs := drainEvents(ts.e)
	checkEvents(t, "last missing packet", names, "request")
	if d := evs[0].Req.Data(); len(d) != size || d[0] != 2 || d[size-1] != 2 {
		t.Fatalf("reassembled %d bytes", len(d))
	}
	resp := bytes.Repeat([]byte{9}, tDPP+1) // two response packets
	if err := ts.e.Respond(ts.now, evs[0].Req, 0, resp); err != nil {
		t.Fatal(err)
	}
	checkOut(t, "response packet 0 answers the last request packet", ts.decodeOut(ts.e.Outgoing(ts.now)),
		[]out{{Type: wire.TypeResp, ReqNum: 2, Idx: 0, Seq: 34, MsgSize: tDPP + 1, Len: tDPP}})
	ts.step("RFR 1", ts.ctl(wire.TypeRFR, 2, 1, 35),
		[]out{{Type: wire.TypeResp, ReqNum: 2, Idx: 1, Seq: 35, MsgSize: tDPP + 1, Len: 1}})
	ts.step("RFR past the end", ts.ctl(wire.TypeRFR, 2, 2, 36), nil)
	if st := ts.e.Stats(); st.DropMalformed != 1 || st.HeldRequests != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerTable_UnknownAndStale(t *testing.T) {
	ts := newTServer(t, Config{})
	unknown := pkt(wire.Header{Type: wire.TypeReq, Session: 999, Token: ts.tok, TxSeq: 5, ReqNum: 3}, nil)
	ts.feed(unknown)
	checkOut(t, "unknown session", decode(t, ts.e.Outgoing(ts.now), clientAddr, 999, ts.tok),
		[]out{{Type: wire.TypeReset, Code: wire.CodeUnknownSession, ReqNum: 3, Seq: 5}})
	stale := pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: ts.tok + 1, TxSeq: 6}, nil)
	ts.feed(stale)
	checkOut(t, "stale token", decode(t, ts.e.Outgoing(ts.now), clientAddr, ts.num, ts.tok+1),
		[]out{{Type: wire.TypeReset, Code: wire.CodeStaleToken, Seq: 6}})
	ts.step("disconnect of an unknown session is not answered",
		pkt(wire.Header{Type: wire.TypeDisconnect, Session: 999, Token: ts.tok}, nil), nil)
	// Before wire v2 every packet carried the client's token, which a
	// client's packets from an earlier session also carried.
	own := pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: tToken, TxSeq: 9, ReqNum: 4}, nil)
	ts.feed(own)
	checkOut(t, "the client's own token is not the server's", decode(t, ts.e.Outgoing(ts.now), clientAddr, ts.num, tToken),
		[]out{{Type: wire.TypeReset, Code: wire.CodeStaleToken, ReqNum: 4, Seq: 9}})
	bad := ts.req(0, 5, 0, 7)
	bad[0] = 0x45
	ts.step("bad magic", bad, nil)
	short := ts.req(0, 5, 0, 8)
	ts.step("payload shorter than the packet's share", short[:len(short)-1], nil)
	if st := ts.e.Stats(); st.DropMalformed != 2 || st.ResetsSent != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServerTable_Admission(t *testing.T) {
	ts := newTServer(t, Config{MaxHeldRequests: 1, MaxMsgSize: 10 << 10})
	ts.step("first request is admitted", ts.req(0, 5, 0, 1),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 0, Seq: 1}}, "request")
	ts.step("second is refused at once", ts.req(1, 5, 0, 2),
		[]out{{Type: wire.TypeNack, Code: wire.CodeServerFull, ReqNum: 1, Seq: 2}})
	ts.step("its duplicate gets the same NACK", ts.req(1, 5, 0, 3),
		[]out{{Type: wire.TypeNack, Code: wire.CodeServerFull, ReqNum: 1, Seq: 3}})
	ts.respond(ts.reqs[0], nil)
	ts.step("room again after the response", ts.req(9, 5, 0, 4),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 9, Seq: 4}}, "request")
	ts.step("too large: the NACK says the limit", pkt(wire.Header{Type: wire.TypeReq, Session: ts.num, Token: ts.tok,
		MsgSize: 20 << 10, TxSeq: 5, ReqNum: 2}, make([]byte, tDPP)),
		[]out{{Type: wire.TypeNack, Code: wire.CodeMsgTooLarge, ReqNum: 2, Seq: 5, MsgSize: 10 << 10}})
	if err := ts.e.Reject(ts.now, ts.reqs[1]); err != nil {
		t.Fatal(err)
	}
	checkOut(t, "application rejects", ts.flush(),
		[]out{{Type: wire.TypeNack, Code: wire.CodeQueueFull, ReqNum: 9, Seq: 4}})
}

func TestServerTable_Cancel(t *testing.T) {
	ts := newTServer(t, Config{})
	ts.step("request", ts.req(0, 5, 0, 1), []out{{Type: wire.TypeCR, Flags: wire.FlagPending, Seq: 1}}, "request")
	ts.step("cancel while handling", ts.ctl(wire.TypeCancel, 0, 0, 2),
		[]out{{Type: wire.TypeCancelAck, Seq: 2}}, "request-canceled")
	if err := ts.e.Respond(ts.now, ts.reqs[0], 0, []byte("late")); !errors.Is(err, ErrRequestGone) {
		t.Fatalf("respond to a canceled request: %v", err)
	}
	ts.step("duplicate cancel", ts.ctl(wire.TypeCancel, 0, 0, 3), []out{{Type: wire.TypeCancelAck, Seq: 3}})
	ts.step("late copy of the canceled request", ts.req(0, 5, 0, 4), nil)

	const size = 3 * tDPP
	ts.step("half a request", ts.req(1, size, 0, 5), []out{{Type: wire.TypeCR, ReqNum: 1, Seq: 5}})
	ts.step("cancel while receiving", ts.ctl(wire.TypeCancel, 1, 0, 6), []out{{Type: wire.TypeCancelAck, ReqNum: 1, Seq: 6}})
	ts.step("cancel of a request never seen", ts.ctl(wire.TypeCancel, 2, 0, 7), []out{{Type: wire.TypeCancelAck, ReqNum: 2, Seq: 7}})
	if st := ts.e.Stats(); st.HeldRequests != 0 || st.HeldBytes != 0 {
		t.Fatalf("cancel leaked: %+v", st)
	}
	ts.step("next number of a canceled slot", ts.req(8, 5, 0, 8),
		[]out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 8, Seq: 8}}, "request")
}

func TestServerTable_PingDisconnect(t *testing.T) {
	ts := newTServer(t, Config{})
	ts.step("ping", ts.ctl(wire.TypePing, 0, 0, 9), []out{{Type: wire.TypePong, Seq: 9}})
	ts.step("request", ts.req(0, 5, 0, 10), []out{{Type: wire.TypeCR, Flags: wire.FlagPending, Seq: 10}}, "request")
	ts.step("disconnect", ts.ctl(wire.TypeDisconnect, 0, 0, 11), nil, "request-canceled", "session-down")
	ts.feed(ts.req(1, 5, 0, 12))
	checkOut(t, "after disconnect", decode(t, ts.e.Outgoing(ts.now), clientAddr, ts.num, ts.tok),
		[]out{{Type: wire.TypeReset, Code: wire.CodeUnknownSession, ReqNum: 1, Seq: 12}})
	if err := ts.e.Respond(ts.now, ts.reqs[0], 0, nil); !errors.Is(err, ErrRequestGone) {
		t.Fatalf("respond after disconnect: %v", err)
	}
	if st := ts.e.Stats(); st.ServerSessions != 0 || st.HeldRequests != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestServerTable_Closing: closing the engine tells each client, with the
// lowest request number the session never saw and the client's token (so
// the client can tell the notice from a forgery by someone who saw the
// server's).
func TestServerTable_Closing(t *testing.T) {
	ts := newTServer(t, Config{})
	ts.step("request 2", ts.req(2, 5, 0, 1), []out{{Type: wire.TypeCR, Flags: wire.FlagPending, ReqNum: 2, Seq: 1}}, "request")
	ts.e.CloseAll(ts.now)
	got := decode(t, ts.e.Outgoing(ts.now), clientAddr, ts.num, ts.tok) // a reset names the server's side
	checkOut(t, "closing", got, []out{{Type: wire.TypeReset, Code: wire.CodeServerClosing, ReqNum: 3, MsgSize: tToken}})
}

func TestServerTable_PeerGone(t *testing.T) {
	ts := newTServer(t, Config{})
	ts.step("request", ts.req(0, 5, 0, 1), []out{{Type: wire.TypeCR, Flags: wire.FlagPending, Seq: 1}}, "request")
	ts.e.PeerGone(ts.now, addr("10.9.9.9:1"))
	checkEvents(t, "another peer gone", func() []string { n, _ := drainEvents(ts.e); return n }())
	ts.e.PeerGone(ts.now, clientAddr)
	n, _ := drainEvents(ts.e)
	checkEvents(t, "the client's process died", n, "request-canceled", "session-down")
	if st := ts.e.Stats(); st.ServerSessions != 0 {
		t.Fatalf("stats %+v", st)
	}
}
