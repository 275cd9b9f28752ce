package proto

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// FuzzEngineReceive feeds arbitrary datagrams to a client engine with calls
// in flight and to a server engine with requests in progress. Whatever
// arrives, the engines must not panic; afterwards, with the two engines
// talking over a clean link, every call must complete exactly once and
// both books must balance: no request held, no credit in use, no call
// pending. The seeds carry both sessions' real tokens, so the fuzzer starts
// from packets the engines accept.
//
// The input is a sequence of datagrams, each prefixed by a 2-byte length
// whose top bit sends it to the server from another IP than the client's.
func FuzzEngineReceive(f *testing.F) {
	p := newPair(f, 32)
	cliTok, srvTok := p.sid.token(), p.srvToken()
	seed := func(pkts ...[]byte) {
		var in []byte
		for _, pk := range pkts {
			in = binary.LittleEndian.AppendUint16(in, uint16(len(pk)))
			in = append(in, pk...)
		}
		f.Add(in)
	}
	h := func(t wire.Type, reqNum uint64, idx, size uint32, payload int) []byte {
		tok := cliTok
		if t.FromClient() {
			tok = srvTok
		}
		return pkt(wire.Header{Type: t, Session: 0, Token: tok, MsgSize: size, PktIndex: idx,
			ReqNum: reqNum, TxSeq: 2}, make([]byte, payload))
	}
	for t := wire.TypeReq; t <= wire.TypePathResponse; t++ {
		seed(h(t, 0, 0, 0, 0))
	}
	seed(h(wire.TypeReq, 1, 0, 3000, 1432), h(wire.TypeReq, 1, 2, 3000, 136), h(wire.TypeReq, 1, 1, 3000, 1432))
	seed(h(wire.TypeResp, 0, 0, 3000, 1432), h(wire.TypeResp, 0, 1, 3000, 1432), h(wire.TypeCR, 0, 0, 0, 0))
	seed(h(wire.TypeCancel, 3, 0, 0, 0), h(wire.TypeNack, 0, 0, 0, 0), h(wire.TypeCancelAck, 0, 0, 0, 0))
	// A packet from another IP, then an answer to the challenge it draws.
	moved := h(wire.TypePing, 0, 0, 0, 0)
	f.Add(append(binary.LittleEndian.AppendUint16(nil, uint16(len(moved))|0x8000), moved...))

	f.Fuzz(func(t *testing.T, in []byte) {
		p := newPair(t, 32)
		calls := map[CallID]int{}
		big := make([]byte, 5000)
		for i := range 3 {
			id, err := p.cli.StartCall(p.now, p.sid, uint32(i), big[:1000*i], nil, Never, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls[id] = 0
		}
		for len(in) >= 2 {
			// The top bit of the length sends the datagram from another
			// IP: a moved client, or a forger (migrate.go).
			n, moved := int(binary.LittleEndian.Uint16(in)&0x7FFF), in[1]&0x80 != 0
			in = in[2:]
			if n > len(in) {
				n = len(in)
			}
			d := in[:n]
			in = in[n:]
			p.now += 100_000
			p.cli.Receive(p.now, serverAddr, d)
			if moved {
				p.srv.Receive(p.now, otherAddr, d)
			} else {
				p.srv.Receive(p.now, clientAddr, d)
			}
			p.cli.Tick(p.now)
			p.srv.Tick(p.now)
			drainFuzz(t, p, calls, false)
		}
		// A clean link from here on, for longer than the failure timeout.
		for range 400 {
			p.now += Time(10 * time.Millisecond)
			p.cli.Tick(p.now)
			p.srv.Tick(p.now)
			drainFuzz(t, p, calls, true)
		}
		for id, n := range calls {
			if n != 1 {
				t.Fatalf("call %d completed %d times", id, n)
			}
		}
		if st := p.cli.Stats(); st.CreditsInUse != 0 || st.PendingCalls != 0 || st.BusySlots != 0 {
			t.Fatalf("client books unbalanced: %+v", st)
		}
		if ss := p.srv.Stats(); ss.HeldBytes < ss.SavedBytes || ss.SavedBytes < 0 {
			t.Fatalf("server books unbalanced: %+v", ss)
		}
		// A server may still hold a request of a live session that forged
		// replies made its client give up before sending all of it; once
		// the session ends (closed, or idle past the server's timeout) it
		// holds nothing.
		_ = p.cli.Close(p.now, p.sid)
		// 50 s: a session whose client gave up on it (failure timeout) is
		// reaped by the idle sweep, up to 30 s + 7.5 s after the last
		// packet it heard.
		for range 50 {
			p.now += Time(time.Second)
			p.cli.Tick(p.now)
			p.srv.Tick(p.now)
			drainFuzz(t, p, calls, true)
		}
		if ss := p.srv.Stats(); ss.ServerSessions != 0 || ss.HeldRequests != 0 || ss.HeldBytes != 0 {
			t.Fatalf("server holds memory after its session ended: %+v", ss)
		}
	})
}

// drainFuzz answers every request with its own bytes and counts
// completions; with deliver it also carries each engine's packets to the
// other, else it drops them.
func drainFuzz(t *testing.T, p *pair, calls map[CallID]int, deliver bool) {
	for ev, ok := p.srv.NextEvent(); ok; ev, ok = p.srv.NextEvent() {
		if ev.Type == EventRequest {
			_ = p.srv.Respond(p.now, ev.Req, 0, ev.Req.Data())
		}
	}
	for ev, ok := p.cli.NextEvent(); ok; ev, ok = p.cli.NextEvent() {
		if ev.Type == EventResponse {
			if calls[ev.Call]++; calls[ev.Call] > 1 {
				t.Fatalf("call %d completed twice", ev.Call)
			}
		}
	}
	if deliver {
		p.pass(p.cli, clientAddr, p.srv)
		p.pass(p.srv, serverAddr, p.cli)
		return
	}
	p.cli.Outgoing(p.now)
	p.srv.Outgoing(p.now)
}

// otherAddr is where FuzzEngineReceive sends datagrams from when their
// length's top bit is set: not the client's IP.
var otherAddr = addr("10.0.0.99:7")

// FuzzConnectRetry: whatever a connect-ack says (any code, flags and
// payload, a retry cookie among them), a connecting client neither panics
// nor wedges: afterwards, over a clean link to a server under pressure,
// its call completes exactly once, answered or failed with its session.
// And the same bytes sent as a connect from a source the server never
// answered (a forger's) never make a session under pressure: only a
// cookie the server minted for that source does.
func FuzzConnectRetry(f *testing.F) {
	ck := wire.Cookie{1, 2, 3, 4, 5, 6, 7, 8}
	lim := wire.Connect{Window: 8, Credits: 32, MaxMsgSize: 1 << 20, MaxData: tDPP}
	b := make([]byte, wire.ConnectLen+wire.CookieLen)
	lim.Put(b)
	copy(b[wire.ConnectLen:], ck[:])
	f.Add(wire.CodeRetry, uint8(0), b)
	f.Add(wire.CodeRetry, uint8(0), b[:wire.ConnectLen])
	f.Add(wire.CodeRetry, uint8(0), b[:wire.ConnectLen+3])
	lim.Token = 0x1234
	lim.Put(b)
	f.Add(wire.CodeOK, uint8(wire.FlagConfirm), b[:wire.ConnectLen])
	f.Add(wire.CodeTooManySessions, uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, code, flags uint8, payload []byte) {
		p := &pair{cli: New(Config{Random: seedRandom(1)}), now: Time(time.Second), buf: make([]byte, 0, 2048),
			srv: New(Config{Random: seedRandom(2), CookieSeed: [32]byte{5}, MaxHalfOpen: 1})}
		p.srv.Receive(p.now, addr("10.9.9.9:9"), connectWith(1, 1, nil)) // the half-open bound is reached
		p.srv.Outgoing(p.now)
		p.sid = p.cli.Connect(p.now, serverAddr)
		p.cli.Outgoing(p.now) // lost
		p.cli.Receive(p.now, serverAddr, pkt(wire.Header{Type: wire.TypeConnectAck, Code: code, Flags: wire.Flags(flags),
			Session: p.sid.Num(), Token: p.sid.token(), TxSeq: 1}, payload))
		p.srv.Receive(p.now, addr("10.8.8.8:8"), pkt(wire.Header{Type: wire.TypeConnect, Session: ^uint32(0), Token: 7, TxSeq: 1}, payload))
		if st := p.srv.Stats(); st.ServerSessions != 1 {
			t.Fatalf("a connect from a forged source made a session under pressure: %+v", st)
		}
		p.srv.Outgoing(p.now)
		calls := map[CallID]int{}
		if id, err := p.cli.StartCall(p.now, p.sid, 1, []byte("hi"), nil, Never, nil); err == nil {
			calls[id] = 0
		}
		for range 400 { // 4 s: twice the failure timeout
			p.now += Time(10 * time.Millisecond)
			p.cli.Tick(p.now)
			p.srv.Tick(p.now)
			drainFuzz(t, p, calls, true)
		}
		for id, n := range calls {
			if n != 1 {
				t.Fatalf("call %d completed %d times", id, n)
			}
		}
	})
}
