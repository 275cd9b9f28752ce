package proto

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
	"github.com/erpc-go/erpc/internal/wire"
)

// floodConnect is a connect from a forged source: a random address and
// port, client session number and token. Its answers go nowhere.
func floodConnect(rng *rand.Rand, buf []byte) (netip.AddrPort, []byte) {
	a := netip.AddrFrom4([4]byte{100, byte(64 + rng.IntN(64)), byte(rng.Uint32()), byte(rng.Uint32())})
	from := netip.AddrPortFrom(a, uint16(1024+rng.IntN(65536-1024)))
	c := wire.Connect{Session: rng.Uint32(), Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: tDPP}
	h := wire.Header{Type: wire.TypeConnect, Session: ^uint32(0), Token: 1 + rng.Uint32N(1<<32-1), TxSeq: 1}
	buf = wire.AppendHeader(buf[:0], &h)
	buf = append(buf, make([]byte, wire.ConnectLen)...)
	c.Put(buf[wire.HeaderLen:])
	return from, buf
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestConnectFlood is the reviewer's attack (issue 27, defect 7): 100,000
// connects from forged sources at 20,000/s against a server with the
// default limits, which used to fill its 65,536-session table in 3.3 s and
// refuse every new client until the idle sweep. Real clients dial all
// through the flood; each must connect and complete a call within one
// second of simulated time, and the server's sessions must stay within the
// half-open bound throughout.
func TestConnectFlood(t *testing.T) {
	const (
		floodN  = 100_000
		perTick = 20 // connects per millisecond: 20,000/s
	)
	cfg := Config{Random: seedRandom(1), CookieSeed: [32]byte{1}}
	bound := cfg.withDefaults().MaxHalfOpen
	w := newWorld(t, 1, simnet.LinkConfig{Delay: 100 * time.Microsecond})
	w.dropStrays = true
	srv := w.addHost("server", "10.0.0.1:1", cfg)
	legit := map[netip.Addr]bool{}
	forgedAccepted := 0
	srv.onEvent = func(ev Event) {
		switch ev.Type {
		case EventRequest:
			if err := srv.e.Respond(w.now, ev.Req, 0, ev.Req.Data()); err != nil {
				t.Fatal(err)
			}
		case EventSessionAccepted:
			if !legit[ev.Peer.Addr()] {
				forgedAccepted++
			}
		}
	}

	// A client with a session open before the flood, calling all through it.
	type result struct {
		start, end Time
		err        error
	}
	results := map[string]*result{}
	var clients []*host
	dial := func(name string, at Time, callAfter time.Duration) {
		addr := fmt.Sprintf("10.0.1.%d:1", len(clients)+1)
		cli := w.addHost(name, addr, Config{Random: seedRandom(uint64(len(clients) + 2))})
		clients = append(clients, cli)
		legit[cli.addr.Addr()] = true
		r := &result{start: at}
		results[name] = r
		cli.onEvent = func(ev Event) {
			switch {
			case ev.Type == EventResponse:
				r.end, r.err = w.now, ev.Err
			case ev.Type == EventSessionDown && r.end == 0:
				r.end, r.err = w.now, ev.Err
			}
		}
		w.at(at, func() {
			sid := cli.e.Connect(w.now, srv.addr)
			w.at(w.now+Time(callAfter), func() {
				r.start = w.now
				if _, err := cli.e.StartCall(w.now, sid, 1, []byte("hello"), nil, Never, nil); err != nil {
					r.end, r.err = w.now, err
				}
			})
		})
	}
	// Real clients dial every half second of the flood and call at once;
	// two call only seconds after they dialed (the session they got under
	// pressure must last), one dialed before the flood.
	dial("before", 0, 2*time.Second)
	for i := range 10 {
		dial(fmt.Sprintf("dial@%dms", 250+500*i), Time(250+500*i)*Time(time.Millisecond), 0)
	}
	dial("idle-then-call", Time(1100*time.Millisecond), 2*time.Second)
	dial("idle-then-call-late", Time(3900*time.Millisecond), 2*time.Second)

	rng := rand.New(rand.NewPCG(7, 7))
	var buf []byte
	sent, maxHalf, maxSessions := 0, 0, 0
	var flood func()
	flood = func() {
		for range perTick {
			from, p := floodConnect(rng, buf)
			buf = p
			srv.e.Receive(w.now, from, p)
			sent++
		}
		st := srv.e.Stats()
		maxHalf = max(maxHalf, st.HalfOpen)
		maxSessions = max(maxSessions, st.ServerSessions)
		if st.HalfOpen > bound || st.ServerSessions > bound+len(clients) {
			t.Fatalf("at %v: %d half-open and %d server sessions; bound %d half-open plus %d clients",
				time.Duration(w.now), st.HalfOpen, st.ServerSessions, bound, len(clients))
		}
		if sent < floodN {
			w.at(w.now+Time(time.Millisecond), flood)
		}
	}
	w.at(Time(10*time.Millisecond), flood)
	before := heapInUse()
	var during uint64
	w.at(Time(4990*time.Millisecond), func() { during = heapInUse() })
	done := func() bool {
		for _, r := range results {
			if r.end == 0 {
				return false
			}
		}
		return sent == floodN
	}
	w.runUntil(Time(10*time.Second), done)

	var worst time.Duration
	for name, r := range results {
		worst = max(worst, time.Duration(r.end-r.start))
		if r.err != nil || r.end-r.start > Time(time.Second) {
			t.Errorf("client %s: call from %v ended at %v (%v): want success within 1 s",
				name, time.Duration(r.start), time.Duration(r.end), r.err)
		}
	}
	st := srv.e.Stats()
	grew := int64(during) - int64(before)
	t.Logf("%d forged connects: %d retries, %d forged sessions made (at most %d at once, %d half-open), %d reaped; "+
		"heap grew %d KiB during the flood; %d answers to forged sources; the slowest client took %v",
		sent, st.RetriesSent, forgedAccepted, maxSessions, maxHalf, st.HalfOpenReaped, grew>>10, w.strays, worst)
	if maxHalf != bound {
		t.Errorf("the flood reached %d half-open sessions, not the bound %d: it did not press", maxHalf, bound)
	}
	// Each forged connect got one answer, a retry unless it made a
	// session, and each forged session its closing reset (the clients
	// got a few retries too).
	if w.strays != floodN+forgedAccepted || int(st.RetriesSent) < floodN-forgedAccepted || forgedAccepted > floodN/10 {
		t.Errorf("%d retries, %d forged sessions and %d answers to forged sources for %d forged connects",
			st.RetriesSent, forgedAccepted, w.strays, floodN)
	}
	// The stated bound: MaxHalfOpen sessions of about 1.1 KiB each, plus
	// the table's and maps' share; 4 MiB leaves room for the heap's noise
	// (the table full, as before the fix, is more than 40 MiB).
	if grew > 4<<20 {
		t.Errorf("the heap grew by %d KiB during the flood: over 4 MiB", grew>>10)
	}
	// Once the flood stops, its sessions go within HalfOpenTimeout.
	w.runFor(Time(1500 * time.Millisecond))
	if st := srv.e.Stats(); st.HalfOpen != 0 || st.ServerSessions > len(clients) {
		t.Errorf("after the flood: %d half-open, %d sessions; want 0 and at most %d", st.HalfOpen, st.ServerSessions, len(clients))
	}
	runtime.KeepAlive(w)
}
