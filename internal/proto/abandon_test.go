package proto

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// datagram is a copy of a packet an engine sent, parsed.
type datagram struct {
	to   netip.AddrPort
	data []byte
	h    wire.Header
}

// sendAll copies what e has to send now.
func sendAll(t *testing.T, e *Engine, now Time) []datagram {
	t.Helper()
	var got []datagram
	for _, p := range e.Outgoing(now) {
		d := datagram{to: p.To, data: p.AppendTo(nil)}
		if _, err := d.h.Parse(d.data); err != nil {
			t.Fatalf("unparsable packet: %v", err)
		}
		got = append(got, d)
	}
	return got
}

// disconnects counts the disconnects in ds addressed to the server
// session num with token tok.
func disconnects(ds []datagram, num, tok uint32) (n int) {
	for _, d := range ds {
		if d.h.Type == wire.TypeDisconnect && d.to == serverAddr && d.h.Session == num && d.h.Token == tok {
			n++
		}
	}
	return n
}

// serverIdentity is the session number and token a connect-ack gives.
func serverIdentity(t *testing.T, ack datagram) (uint32, uint32) {
	var c wire.Connect
	if err := c.Parse(ack.data[wire.HeaderLen:]); err != nil {
		t.Fatal(err)
	}
	return c.Session, c.Token
}

// TestClientTable_AbandonedConnectGetsDisconnect: a client session closed
// while its connect is unanswered leaves the server a session nothing
// uses. When the server's connect-ack comes back within a failure timeout
// of the close, the client answers it with a disconnect carrying the
// server's number and token, once, and the server's session ends; an ack
// later than that gets nothing. Seeded: random retransmissions before the
// close, random copies of the connect reaching the server, random
// lateness of the acks (each of which arrive, in random order).
func TestClientTable_AbandonedConnectGetsDisconnect(t *testing.T) {
	const ft = 2 * time.Second // FailureTimeout's default
	var answered, tooLate int
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		cli := New(Config{Random: seedRandom(seed)})
		srv := New(Config{Random: seedRandom(seed + 1000)})
		now := Time(1)
		id := cli.Connect(now, serverAddr)
		connects := sendAll(t, cli, now)
		for range rng.IntN(4) {
			now = cli.NextDeadline()
			cli.Tick(now)
			connects = append(connects, sendAll(t, cli, now)...)
		}
		var acks []datagram
		for i, c := range connects {
			if i > 0 && rng.IntN(3) == 0 {
				continue // lost on the way; the first always arrives
			}
			srv.Receive(now, clientAddr, c.data)
			acks = append(acks, sendAll(t, srv, now)...)
		}
		if len(acks) == 0 || srv.Stats().ServerSessions != 1 {
			t.Fatalf("seed %d: the server sent %d acks and holds %d sessions, want some and 1", seed, len(acks), srv.Stats().ServerSessions)
		}
		num, tok := serverIdentity(t, acks[0])
		now = now.Add(time.Duration(rng.IntN(50)) * time.Millisecond)
		if err := cli.Close(now, id); err != nil {
			t.Fatal(err)
		}
		if ds := sendAll(t, cli, now); len(ds) != 0 {
			t.Fatalf("seed %d: closing a connecting session sent %d packets, want none yet", seed, len(ds))
		}
		late := rng.IntN(2) == 0
		wait := time.Duration(rng.Int64N(int64(ft)))
		if late {
			wait += ft
		}
		now = now.Add(wait)
		rng.Shuffle(len(acks), func(i, j int) { acks[i], acks[j] = acks[j], acks[i] })
		var out []datagram
		for _, a := range acks {
			cli.Receive(now, serverAddr, a.data)
			out = append(out, sendAll(t, cli, now)...)
		}
		got := disconnects(out, num, tok)
		for _, d := range out {
			srv.Receive(now, clientAddr, d.data)
		}
		sessions := srv.Stats().ServerSessions
		switch {
		case late && (got != 0 || len(out) != 0):
			t.Fatalf("seed %d: acks %v after the close got %d packets (%d disconnects), want none", seed, wait, len(out), got)
		case late:
			tooLate++
		case got != 1 || len(out) != 1 || sessions != 0:
			t.Fatalf("seed %d: %d acks %v after the close got %d packets, %d of them disconnects; the server holds %d sessions; want 1 disconnect and 0 sessions",
				seed, len(acks), wait, len(out), got, sessions)
		default:
			answered++
		}
	}
	if answered == 0 || tooLate == 0 {
		t.Fatalf("answered %d abandoned connects, ignored %d late acks: want both cases", answered, tooLate)
	}
}

// TestClientTable_AbandonedConnectsBounded: the client remembers at most
// maxAbandoned connects (the newest); and an ack for an abandoned session
// whose number a live session to the same server has taken over gets no
// disconnect, which would confirm the abandoned session on the server and
// so end the live one.
func TestClientTable_AbandonedConnectsBounded(t *testing.T) {
	cli := New(Config{Random: seedRandom(1)})
	srv := New(Config{Random: seedRandom(2)})
	now := Time(1)
	const n = maxAbandoned + 36
	var acks []datagram
	for range n {
		id := cli.Connect(now, serverAddr)
		for _, c := range sendAll(t, cli, now) {
			srv.Receive(now, clientAddr, c.data)
		}
		acks = append(acks, sendAll(t, srv, now)...)
		cli.Close(now, id)
	}
	var out []datagram
	for _, a := range acks {
		cli.Receive(now, serverAddr, a.data)
		out = append(out, sendAll(t, cli, now)...)
	}
	for _, d := range out {
		srv.Receive(now, clientAddr, d.data)
	}
	if len(out) != maxAbandoned || srv.Stats().ServerSessions != n-maxAbandoned || len(cli.abandoned) != 0 {
		t.Fatalf("%d connects abandoned: %d disconnects, the server holds %d sessions, %d remembered; want %d, %d, 0",
			n, len(out), srv.Stats().ServerSessions, len(cli.abandoned), maxAbandoned, n-maxAbandoned)
	}

	// Number reuse.
	cli = New(Config{Random: seedRandom(3)})
	srv = New(Config{Random: seedRandom(4)})
	old := cli.Connect(now, serverAddr)
	for _, c := range sendAll(t, cli, now) {
		srv.Receive(now, clientAddr, c.data)
	}
	oldAcks := sendAll(t, srv, now)
	cli.Close(now, old)
	live := cli.Connect(now, serverAddr)
	if live.Num() != old.Num() {
		t.Fatalf("the new session has number %d, want the abandoned one's %d", live.Num(), old.Num())
	}
	for _, c := range sendAll(t, cli, now) {
		srv.Receive(now, clientAddr, c.data)
	}
	for _, a := range sendAll(t, srv, now) {
		cli.Receive(now, serverAddr, a.data)
	}
	if _, err := cli.StartCall(now, live, 1, []byte("x"), nil, Never, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range sendAll(t, cli, now) {
		srv.Receive(now, clientAddr, d.data) // confirms the live session
	}
	sendAll(t, srv, now)
	for _, a := range oldAcks {
		cli.Receive(now, serverAddr, a.data)
	}
	out = sendAll(t, cli, now)
	for _, d := range out {
		srv.Receive(now, clientAddr, d.data)
	}
	if len(out) != 0 || srv.Stats().ServerSessions != 2 {
		t.Fatalf("late ack for a number reused: client sent %d packets, server holds %d sessions; want 0 and 2 (the live one kept)",
			len(out), srv.Stats().ServerSessions)
	}
}
