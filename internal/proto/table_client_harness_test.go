package proto

import (
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

const (
	tSrvNum = 3
	tSrvTok = 0x5EC0_0001 // the server session's token, from the connect-ack
)

// tclient is a client engine with one session to serverAddr, driven by
// hand-made server packets.
type tclient struct {
	t     *testing.T
	e     *Engine
	sid   SessionID
	token uint32
	now   Time
	evs   []string
	done  map[CallID]Event
	// seq0 is where the session's sequence numbers start (at random,
	// see onReset); the tables count from 1 and step and flush translate.
	seq0 uint32
}

func newTClient(t *testing.T, cfg Config) *tclient {
	tc := &tclient{t: t, e: New(cfg), now: 1000, done: map[CallID]Event{}}
	tc.sid = tc.e.Connect(tc.now, serverAddr)
	tc.token = tc.sid.token()
	got := decode(t, tc.e.Outgoing(tc.now), serverAddr, ^uint32(0), tc.token)
	if len(got) == 1 {
		tc.seq0 = got[0].Seq - 1
	}
	checkOut(t, "connect", tc.relative(got), []out{{Type: wire.TypeConnect, Seq: 1, Len: wire.ConnectLen}})
	win := cfg.withDefaults()
	c := wire.Connect{Session: tSrvNum, Window: uint16(win.Window), Credits: uint16(win.Credits), MaxMsgSize: 8 << 20, MaxData: tDPP, Token: tSrvTok}
	var b [wire.ConnectLen]byte
	c.Put(b[:])
	tc.now += 20_000 // 20 µs RTT
	tc.step("connect-ack", pkt(wire.Header{Type: wire.TypeConnectAck, Session: tc.sid.Num(), Token: tc.token, TxSeq: 1}, b[:]),
		nil, "session-up")
	return tc
}

func (tc *tclient) flush() []out {
	names, evs := drainEvents(tc.e)
	tc.evs = append(tc.evs, names...)
	for _, ev := range evs {
		if ev.Type == EventResponse {
			tc.done[ev.Call] = ev
		}
	}
	return tc.relative(decode(tc.t, tc.e.Outgoing(tc.now), serverAddr, tSrvNum, tSrvTok))
}

// relative counts the sequence numbers of packets the client sent from 1.
func (tc *tclient) relative(outs []out) []out {
	for i := range outs {
		outs[i].Seq -= tc.seq0
	}
	return outs
}

// absolute turns the sequence number a table's server packet echoes (from
// 1) into the one the client sent.
func (tc *tclient) absolute(p []byte) []byte {
	var h wire.Header
	payload, err := h.Parse(p)
	if err != nil {
		return p // a malformed packet goes as it is
	}
	h.TxSeq += tc.seq0
	return pkt(h, payload)
}

// step feeds a server packet and checks what goes out and what fires.
func (tc *tclient) step(what string, p []byte, want []out, events ...string) {
	tc.t.Helper()
	tc.evs = nil
	tc.e.Receive(tc.now, serverAddr, tc.absolute(p))
	checkOut(tc.t, what, tc.flush(), want)
	checkEvents(tc.t, what, tc.evs, events...)
}

// tick advances the clock by d, runs the timers and checks the output.
func (tc *tclient) tick(what string, d time.Duration, want []out, events ...string) {
	tc.t.Helper()
	tc.evs = nil
	tc.now = tc.now.Add(d)
	tc.e.Tick(tc.now)
	checkOut(tc.t, what, tc.flush(), want)
	checkEvents(tc.t, what, tc.evs, events...)
}

func (tc *tclient) call(what string, req []byte, want []out) CallID {
	tc.t.Helper()
	id, err := tc.e.StartCall(tc.now, tc.sid, tReqType, req, nil, Never, nil)
	if err != nil {
		tc.t.Fatal(err)
	}
	checkOut(tc.t, what, tc.flush(), want)
	return id
}

func (tc *tclient) srv(t wire.Type, flags wire.Flags, code uint8, reqNum uint64, idx, seq uint32, size int, data []byte) []byte {
	return pkt(wire.Header{Type: t, Flags: flags, Code: code, Session: tc.sid.Num(), Token: tc.token,
		MsgSize: uint32(size), PktIndex: idx, TxSeq: seq, ReqNum: reqNum}, data)
}

// fivePacketsAtOnce is a fresh session's five-packet request of size bytes
// (4*tDPP+1) leaving all at once, as an uncongested session sends it.
func fivePacketsAtOnce(size uint32) []out {
	outs := make([]out, 5)
	for i := range outs {
		outs[i] = out{Type: wire.TypeReq, Idx: uint32(i), Seq: uint32(2 + i), MsgSize: size, Len: tDPP}
	}
	outs[4].Len = 1
	return outs
}
