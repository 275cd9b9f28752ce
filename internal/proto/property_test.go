package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

var (
	simSeeds = flag.Int("sim.seeds", envInt("ERPC_SIM_SEEDS", 1000), "number of seeds each property test runs (default $ERPC_SIM_SEEDS or 1000)")
	simSeed  = flag.Int64("sim.seed", -1, "run only this seed (to replay a failure)")
	simLog   = flag.Bool("sim.log", false, "log a summary of every seed")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// scenario is one randomized run: a network, a population of clients and
// sessions, a workload, and the server's behaviour.
type scenario struct {
	seed        uint64
	link        simnet.LinkConfig
	clients     int
	sessions    int     // per client
	calls       int     // per session
	slowHandler float64 // fraction of requests answered later, as by a background worker
	cancel      float64 // fraction of calls the client cancels at a random time
	maxHeld     int     // server's MaxHeldRequests; small values force NACKs
	window      int
	credits     int
	failure     time.Duration // client failure timeout
	paths       int           // client paths; each one's link to the server is slower than the last
	cutAt       Time          // when the network goes down (partition kind)
	cutFor      Time          // and for how long
	lean        bool          // the clients' transport is Reliable (lean kind)
}

func genScenario(seed uint64, kind string) scenario {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	sc := scenario{
		seed: seed,
		link: simnet.LinkConfig{
			Loss:         []float64{0, 0.01, 0.05, 0.1, 0.3}[r.IntN(5)],
			Dup:          []float64{0, 0.05}[r.IntN(2)],
			Reorder:      []float64{0, 0.05, 0.2}[r.IntN(3)],
			Delay:        time.Duration(1+r.IntN(50)) * time.Microsecond,
			Jitter:       time.Duration(r.IntN(30)) * time.Microsecond,
			ReorderDelay: time.Duration(r.IntN(200)) * time.Microsecond,
		},
		clients:     1 + r.IntN(3),
		sessions:    1 + r.IntN(2),
		calls:       5 + r.IntN(25),
		slowHandler: []float64{0, 0.3, 1}[r.IntN(3)],
		maxHeld:     4096,
		window:      []int{1, 2, 8, 8}[r.IntN(4)],
		credits:     []int{1, 4, 32, 32}[r.IntN(4)],
		paths:       []int{1, 1, 2, 4}[r.IntN(4)],
	}
	if r.IntN(4) == 0 {
		sc.link.Bandwidth = float64(50+r.IntN(500)) * 1e6 // 50..550 MB/s
	}
	sc.failure = 5 * time.Second
	switch kind {
	case "partition":
		sc.failure = 200 * time.Millisecond
		sc.cutAt = Time(r.IntN(3000)) * Time(time.Microsecond)
		sc.cutFor = Time(50+r.IntN(550)) * Time(time.Millisecond)
	case "cancel":
		sc.cancel = 0.3
	case "lean":
		// A transport that delivers every datagram once and in order
		// (shared memory): no loss, duplication, reordering or jitter,
		// one path; the clients' sessions take the lean path.
		sc.link.Loss, sc.link.Dup, sc.link.Reorder, sc.link.Jitter = 0, 0, 0, 0
		sc.paths, sc.lean, sc.cancel = 1, true, 0.3
	case "overload":
		sc.slowHandler = 1
		sc.maxHeld = 1 + r.IntN(4)
	}
	return sc
}

// msgSize draws a message size from 0 B to 2 MB, most of them small.
func msgSize(r *rand.Rand, budget *int) int {
	var n int
	switch p := r.IntN(100); {
	case p < 40:
		n = r.IntN(65)
	case p < 65:
		n = 65 + r.IntN(1400)
	case p < 85:
		n = 1433 + r.IntN(16<<10)
	case p < 95:
		n = (16 << 10) + r.IntN(240<<10)
	default:
		n = (256 << 10) + r.IntN((2<<20)-(256<<10)+1)
	}
	if n > *budget {
		n = r.IntN(65)
	}
	*budget -= n
	return n
}

// responseFor is the server's deterministic answer to req: its size and
// bytes follow from a hash of the request, so the client can check both.
func responseFor(req []byte) []byte {
	h := fnv.New64a()
	h.Write(req)
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	budget := 1 << 20
	n := msgSize(r, &budget)
	out := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(out[i:], r.Uint64())
	}
	return out
}

// tagOf reads the unique call tag a test request starts with (if it has room).
func tagOf(req []byte) (uint64, bool) {
	if len(req) < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(req), true
}

type simCall struct {
	sess     SessionID
	req      []byte
	canceled bool
	done     int
	ev       Event
}

type simResult struct {
	ok, failed, canceled, overloaded int
	sessionsDown                     int
	serverCancels                    int // EventRequestCanceled at the server
	retransmits, nacks               uint64
	simTime                          time.Duration
}

// runScenario runs sc and checks the protocol's promises:
//   - every call completes exactly once;
//   - a successful call got exactly the response the server computed for its
//     request, and the handler ran exactly once for it;
//   - no handler ever runs twice for one request;
//   - a call fails only for a reason it can have: its session failed, it
//     was canceled, or the server NACKed it (and then no handler ran);
//   - at the end no call, slot, credit, request or buffer is held, and every
//     session is gone on both sides once the clients close.
func runScenario(t *testing.T, sc scenario) simResult {
	top, _, _ := strings.Cut(t.Name(), "/")
	replay := fmt.Sprintf("replay: go test ./internal/proto -run '^%s$' -sim.seed=%d -v", top, sc.seed)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\n%s", sc.seed, fmt.Sprintf(format, args...), replay)
	}
	rng := rand.New(rand.NewPCG(sc.seed, 0xC0FFEE))
	w := newWorld(t, sc.seed, sc.link)
	base := Config{
		Window: sc.window, Credits: sc.credits,
		FailureTimeout: sc.failure, IdleTimeout: 10 * time.Second,
		KeepaliveInterval: 2 * time.Second, Paths: sc.paths,
	}
	if sc.lean {
		base.Reliable = func(netip.AddrPort) bool { return true }
	}
	srvCfg := base
	srvCfg.MaxHeldRequests = sc.maxHeld
	srvCfg.Random = seedRandom(sc.seed)
	srv := w.addHost("server", "10.0.0.1:1", srvCfg)

	// The server: runs each handler inline or later, counts executions.
	execByTag := map[uint64]int{}
	execByReq := map[[2]uint64]int{}
	var serverCancels int
	srv.onEvent = func(ev Event) {
		if ev.Type == EventRequestCanceled {
			serverCancels++
		}
		if ev.Type != EventRequest {
			return
		}
		r := ev.Req.r
		key := [2]uint64{uint64(ev.Session), r.reqNum}
		if execByReq[key]++; execByReq[key] > 1 {
			fail("handler ran twice for session %x request %d", ev.Session, r.reqNum)
		}
		if tag, ok := tagOf(ev.Req.Data()); ok {
			execByTag[tag]++
		}
		resp := responseFor(ev.Req.Data())
		h := ev.Req
		respond := func() {
			err := srv.e.Respond(w.now, h, 0, resp)
			if err != nil && !errors.Is(err, ErrRequestGone) {
				fail("respond: %v", err)
			}
		}
		if rng.Float64() < sc.slowHandler {
			w.at(w.now+Time(rng.IntN(3000))*Time(time.Microsecond), respond)
		} else {
			respond()
		}
	}

	// The clients.
	type callKey struct {
		client int
		id     CallID
	}
	calls := map[callKey]*simCall{}
	var res simResult
	total := 0
	nextTag := uint64(1)
	budget := 6 << 20
	downSessions := map[SessionID]error{}
	type client struct {
		h    *host
		sids []SessionID
	}
	var clients []*client
	for c := range sc.clients {
		cfg := base
		cfg.Random = seedRandom(sc.seed + uint64(c) + 1)
		cl := &client{h: w.addHost(fmt.Sprintf("client%d", c), fmt.Sprintf("10.0.1.%d:1", c+1), cfg)}
		clients = append(clients, cl)
		for p := 1; p < sc.paths; p++ { // other paths, each a little longer: packets reorder across them
			slower := sc.link
			slower.Delay += time.Duration(p) * 20 * time.Microsecond
			w.net.SetLink(pathAddr(cl.h.addr, uint8(p)), srv.addr, slower)
			w.net.SetLink(srv.addr, pathAddr(cl.h.addr, uint8(p)), slower)
		}
		cl.h.onEvent = func(ev Event) {
			switch ev.Type {
			case EventSessionDown:
				downSessions[ev.Session] = ev.Err
			case EventResponse:
				sc := calls[callKey{c, ev.Call}]
				if sc == nil {
					fail("completion for unknown call %d", ev.Call)
				}
				sc.done++
				sc.ev = ev
				if sc.done > 1 {
					fail("call %d completed twice", ev.Call)
				}
			}
		}
		for range sc.sessions {
			sid := cl.h.e.Connect(w.now, srv.addr)
			cl.sids = append(cl.sids, sid)
			for range sc.calls {
				req := make([]byte, msgSize(rng, &budget))
				for i := range req {
					req[i] = byte(rng.Uint32())
				}
				if len(req) >= 8 {
					binary.LittleEndian.PutUint64(req, nextTag)
					nextTag++
				}
				start := w.now + Time(rng.IntN(2000))*Time(time.Microsecond)
				e, sid, c := cl.h.e, sid, c
				total++
				w.at(start, func() {
					id, err := e.StartCall(w.now, sid, 1, req, nil, Never, nil)
					if err != nil {
						if errors.Is(err, ErrNoSession) && downSessions[sid] != nil {
							total--
							return
						}
						fail("start call: %v", err)
					}
					call := &simCall{sess: sid, req: req}
					calls[callKey{c, id}] = call
					if rng.Float64() < sc.cancel {
						w.at(w.now+Time(rng.IntN(3000))*Time(time.Microsecond), func() {
							if e.Cancel(w.now, sid, id) {
								call.canceled = true
							}
						})
					}
				})
			}
		}
	}

	if sc.cutFor > 0 {
		w.at(sc.cutAt, func() {
			link := sc.link
			w.net.SetDefault(simnet.LinkConfig{Down: true})
			w.at(w.now+sc.cutFor, func() { w.net.SetDefault(link) })
		})
	}
	limit := Time(10 * time.Minute)
	allDone := func() bool {
		if len(calls) != total || len(w.actions) > 0 {
			return false
		}
		for _, c := range calls {
			if c.done == 0 {
				return false
			}
		}
		return true
	}
	w.runUntil(limit, allDone)

	// Every completion is accounted for.
	for id, c := range calls {
		ev := c.ev
		tag, tagged := tagOf(c.req)
		switch {
		case ev.Err == nil:
			if c.canceled {
				fail("call %d was canceled but succeeded", id)
			}
			if want := responseFor(c.req); !bytes.Equal(ev.Data, want) {
				fail("call %d: wrong response: %d bytes, want %d", id, len(ev.Data), len(want))
			}
			if tagged && execByTag[tag] != 1 {
				fail("call %d succeeded but its handler ran %d times", id, execByTag[tag])
			}
			res.ok++
		case errors.Is(ev.Err, ErrCanceled):
			if !c.canceled {
				fail("call %d reports canceled but was not", id)
			}
			res.canceled++
		case errors.Is(ev.Err, ErrOverloaded):
			if tagged && execByTag[tag] != 0 {
				fail("call %d was NACKed but its handler ran", id)
			}
			res.overloaded++
		default:
			if downSessions[c.sess] == nil {
				fail("call %d failed (%v) on a session that did not fail", id, ev.Err)
			}
			res.failed++
		}
		if tagged && execByTag[tag] > 1 {
			fail("call %d: handler ran %d times", id, execByTag[tag])
		}
	}
	if sc.cancel == 0 && sc.maxHeld >= 4096 && res.ok+res.failed != len(calls) {
		fail("unexpected outcomes: %+v", res)
	}
	if sc.cutFor == 0 && len(downSessions) > 0 {
		fail("a session failed on a network that never went down: %v", downSessions)
	}

	// Nothing is held once the calls are done and the handlers finished.
	w.runUntil(limit, func() bool {
		for _, cl := range clients {
			if st := cl.h.e.Stats(); st.BusySlots != 0 {
				return false // cancels still waiting for their acknowledgment
			}
		}
		return srv.e.Stats().HeldRequests == 0
	})
	for _, cl := range clients {
		st := cl.h.e.Stats()
		if st.PendingCalls != 0 || st.CreditsInUse != 0 {
			fail("client %s holds calls or credits: %+v", cl.h.name, st)
		}
		res.retransmits += st.Retransmits
	}
	// Closing the sessions frees the server's side, by disconnect or by the
	// idle sweep when the disconnect is lost.
	for _, cl := range clients {
		for _, sid := range cl.sids {
			_ = cl.h.e.Close(w.now, sid)
		}
	}
	w.runUntil(w.now+Time(time.Minute), func() bool { return srv.e.Stats().ServerSessions == 0 })
	st := srv.e.Stats()
	if st.HeldRequests != 0 || st.HeldBytes != 0 || st.PooledBytes > srv.e.cfg.PoolBytes {
		fail("server holds memory after all sessions closed: %+v", st)
	}
	for _, cl := range clients {
		if st := cl.h.e.Stats(); st.ClientSessions != 0 {
			fail("client %s still has sessions: %+v", cl.h.name, st)
		}
	}
	for _, err := range downSessions {
		if !errors.Is(err, ErrSessionClosed) { // failed, not closed by its client
			res.sessionsDown++
		}
	}
	res.serverCancels = serverCancels
	res.nacks = st.NacksSent
	res.simTime = time.Duration(w.now)
	if *simLog {
		t.Logf("seed %d: %+v scenario %+v", sc.seed, res, sc)
	}
	return res
}

// forEachSeed runs fn for -sim.seeds seeds (or the one -sim.seed names),
// in eight parallel groups.
func forEachSeed(t *testing.T, fn func(t *testing.T, seed uint64)) {
	seeds := make([]uint64, 0, *simSeeds)
	if *simSeed >= 0 {
		seeds = append(seeds, uint64(*simSeed))
	} else {
		for i := range *simSeeds {
			seeds = append(seeds, uint64(i))
		}
	}
	const groups = 8
	for g := range groups {
		t.Run(fmt.Sprintf("group%d", g), func(t *testing.T) {
			t.Parallel()
			for i := g; i < len(seeds); i += groups {
				fn(t, seeds[i])
			}
		})
	}
}

// forSeeds runs a scenario of kind for every seed and returns when all are
// done; check sees each seed's result.
func forSeeds(t *testing.T, kind string, check func(t *testing.T, sc scenario, r simResult)) {
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) {
			sc := genScenario(seed, kind)
			r := runScenario(t, sc)
			if check != nil {
				check(t, sc, r)
			}
		})
	})
}

// simTotals sums results over all seeds, so that each property test can
// check that the fault it is about really happened: a fault made into a
// no-op (admission that always succeeds, a Cancel that does nothing, a
// network that never drops) must fail the test, not pass it vacuously.
type simTotals struct {
	seeds, ok, canceled, overloaded, failed, sessionsDown, retransmits, nacks, serverCancels atomic.Int64
}

func (s *simTotals) add(r simResult) {
	s.seeds.Add(1)
	s.ok.Add(int64(r.ok))
	s.canceled.Add(int64(r.canceled))
	s.overloaded.Add(int64(r.overloaded))
	s.failed.Add(int64(r.failed))
	s.sessionsDown.Add(int64(r.sessionsDown))
	s.retransmits.Add(int64(r.retransmits))
	s.nacks.Add(int64(r.nacks))
	s.serverCancels.Add(int64(r.serverCancels))
}

// require fails t unless every named total is positive (with enough seeds
// for that to be expected).
func (s *simTotals) require(t *testing.T, names ...string) {
	t.Helper()
	if t.Failed() || s.seeds.Load() < 50 {
		return
	}
	all := map[string]int64{
		"successful calls": s.ok.Load(), "canceled calls": s.canceled.Load(), "NACKed calls": s.overloaded.Load(),
		"failed calls": s.failed.Load(), "failed sessions": s.sessionsDown.Load(), "retransmissions": s.retransmits.Load(),
		"NACKs sent": s.nacks.Load(), "requests canceled at the server": s.serverCancels.Load(),
	}
	for _, n := range names {
		if all[n] == 0 {
			t.Errorf("no %s in %d seeds: the test does not exercise what it is about", n, s.seeds.Load())
		}
	}
	t.Logf("%d seeds: %v", s.seeds.Load(), all)
}

// TestSimProperty: lossy, duplicating, reordering networks; every call
// completes exactly once with the right bytes.
func TestSimProperty(t *testing.T) {
	var tot simTotals
	forSeeds(t, "", func(t *testing.T, sc scenario, r simResult) { tot.add(r) })
	tot.require(t, "successful calls", "retransmissions")
}

// TestSimLean: the lean path (Config.Reliable) over a network that keeps
// the promise: every call completes exactly once with the right bytes, a
// third of them canceled at random moments, slow handlers included, and
// nothing is ever sent twice.
func TestSimLean(t *testing.T) {
	var tot simTotals
	forSeeds(t, "lean", func(t *testing.T, sc scenario, r simResult) {
		tot.add(r)
		if r.retransmits != 0 {
			t.Errorf("seed %d: %d retransmissions on the lean path over a reliable network", sc.seed, r.retransmits)
		}
	})
	tot.require(t, "successful calls", "canceled calls")
}

// TestSimCancel: clients cancel a third of their calls at random moments;
// the session stays usable and nothing leaks.
func TestSimCancel(t *testing.T) {
	var tot simTotals
	forSeeds(t, "cancel", func(t *testing.T, sc scenario, r simResult) { tot.add(r) })
	tot.require(t, "successful calls", "canceled calls", "requests canceled at the server")
}

// TestSimPartition: the network goes down for 50 to 600 ms against a
// failure timeout of 200 ms: sessions may fail, and then exactly their
// pending calls fail, once each, and both sides free their state.
func TestSimPartition(t *testing.T) {
	var tot simTotals
	forSeeds(t, "partition", func(t *testing.T, sc scenario, r simResult) { tot.add(r) })
	tot.require(t, "successful calls", "failed calls", "failed sessions")
}

// TestSimOverload: a server that holds at most a few requests refuses the
// rest with NACKs; refused calls fail fast and their handlers never run.
func TestSimOverload(t *testing.T) {
	var tot simTotals
	forSeeds(t, "overload", func(t *testing.T, sc scenario, r simResult) {
		tot.add(r)
		if r.overloaded > 0 && r.nacks == 0 {
			t.Fatalf("seed %d: %d calls overloaded but the server sent no NACK", sc.seed, r.overloaded)
		}
	})
	tot.require(t, "successful calls", "NACKed calls", "NACKs sent")
}
