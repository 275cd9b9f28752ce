package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// ixTotals sums the faults TestSimInterplay injects, so it can check they
// happened.
type ixTotals struct {
	seeds, calls, ok, notExec, reissued, failed, canceled, lost                        atomic.Int64
	srvRestarts, cliRestarts, natMoves, ipMoves, portReuse, abandons                   atomic.Int64
	retries, migrations, challenges, reaped, badCookies, spentCookies, held            atomic.Int64
	dupd, maxLatencyMs, replays, halfMig, partitions, maxRatio, maxRatioSeed, selfDial atomic.Int64
}

type ixCall struct {
	tag      uint64
	attempt  uint64 // bumped on reissue
	req      []byte
	client   int
	cinc     int // client incarnation that started it
	sess     SessionID
	started  Time
	done     int
	err      error
	lost     bool // its client process restarted before it completed
	reissued bool
	// attempts proven not executed
	notExec map[uint64]bool
}

// ixClient is a client process of TestSimInterplay: its host, its
// incarnation (bumped by each restart) and what it started.
type ixClient struct {
	i     int
	h     *host
	inc   int
	sids  []SessionID
	down  map[SessionID]error
	calls map[CallID]*ixCall
	cfg   func() Config
}

// TestSimInterplay combines the features that landed together: a server
// under half-open pressure (small MaxHalfOpen, a trickle of forged
// connects), so retries and cookies happen; several clients behind NATs
// that move them to new ports and IPs and hand freed ports to other
// clients; client and server restarts; abandoned connects; cancellations
// and slow handlers; and a network that loses, duplicates and holds
// datagrams back by many RTOs.
func TestSimInterplay(t *testing.T) {
	var tot ixTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runInterplay(t, seed, &tot) })
	})
	t.Logf("%d seeds: calls %d ok %d notExec %d reissued %d failed %d canceled %d lost %d; srvRestarts %d cliRestarts %d natMoves %d (ip %d, reuse %d) abandons %d; retries %d migrations %d challenges %d reaped %d badCookies %d spent %d; net held %d dup %d replays %d; half-open migrations %d; max latency %d ms; max latency/FailureTimeout %d%% (seed %d); seeds where the server dials itself %d",
		tot.seeds.Load(), tot.calls.Load(), tot.ok.Load(), tot.notExec.Load(), tot.reissued.Load(), tot.failed.Load(), tot.canceled.Load(), tot.lost.Load(),
		tot.srvRestarts.Load(), tot.cliRestarts.Load(), tot.natMoves.Load(), tot.ipMoves.Load(), tot.portReuse.Load(), tot.abandons.Load(),
		tot.retries.Load(), tot.migrations.Load(), tot.challenges.Load(), tot.reaped.Load(), tot.badCookies.Load(), tot.spentCookies.Load(),
		tot.held.Load(), tot.dupd.Load(), tot.replays.Load(), tot.halfMig.Load(), tot.maxLatencyMs.Load(), tot.maxRatio.Load(), tot.maxRatioSeed.Load(), tot.selfDial.Load())
	if t.Failed() || tot.seeds.Load() < 50 {
		return
	}
	for _, f := range []struct {
		what string
		n    int64
	}{
		{"successful calls", tot.ok.Load()}, {"not executed", tot.notExec.Load()}, {"server restarts", tot.srvRestarts.Load()},
		{"client restarts", tot.cliRestarts.Load()}, {"ip moves", tot.ipMoves.Load()}, {"port reuse", tot.portReuse.Load()},
		{"abandons", tot.abandons.Load()}, {"retries", tot.retries.Load()}, {"migrations", tot.migrations.Load()},
		{"reaped", tot.reaped.Load()}, {"held back", tot.held.Load()}, {"canceled", tot.canceled.Load()},
	} {
		if f.n == 0 {
			t.Errorf("no %s", f.what)
		}
	}
}

// TestSimInterplayCorrupt: TestSimInterplay's world, where the network also
// delivers copies of 5 % of the datagrams with one to three bits flipped in
// their first 64 bytes.
func TestSimInterplayCorrupt(t *testing.T) {
	var tot ixTotals
	t.Run("seeds", func(t *testing.T) {
		forEachSeed(t, func(t *testing.T, seed uint64) { runInterplayMut(t, seed, &tot, true) })
	})
	t.Logf("%d seeds: calls %d ok %d", tot.seeds.Load(), tot.calls.Load(), tot.ok.Load())
}

func runInterplay(t *testing.T, seed uint64, tot *ixTotals) { runInterplayMut(t, seed, tot, false) }

// runInterplayMut: with mutate, the network also delivers corrupted
// copies of some datagrams; then only what must hold on any input is
// checked (no panic, every call completes once and in bounded time, no
// leak), not at-most-once, which a corrupted request number can defeat.
func runInterplayMut(t *testing.T, seed uint64, tot *ixTotals, mutate bool) {
	ix := newInterplay(t, seed, tot, mutate)
	ix.hideClientsBehindNAT()
	ix.serveCountingRuns()
	ix.restartServerNowAndThen()
	ix.keepLateCopies()
	ix.partitionNowAndThen()
	ix.forgeConnects()
	ix.startClients()
	ix.moveClientsBehindNAT()
	ix.runAndCheck()
}

// interplay is one seed of TestSimInterplay: its world and what the steps
// of runInterplayMut share. The steps run in their order, which is the
// order of their random draws and of their first scheduled actions, so a
// seed replays the same world.
type interplay struct {
	t      *testing.T
	seed   uint64
	tot    *ixTotals
	mutate bool
	// fail ends the seed; soft too, unless the network corrupts
	// datagrams (mutate), where it checks only what holds on any input.
	fail, soft func(format string, args ...any)
	rng        *rand.Rand
	pick       func(v ...float64) float64
	link       simnet.LinkConfig
	w          *world
	failure    time.Duration
	base       Config
	maxHalf    int

	srv          *host
	srvInc       uint64 // the server's incarnation, bumped by each restart
	srvCfg       func() Config
	srvStats     func()
	onSrvRestart func()            // the server's own client sessions die with it
	execAt       map[[2]uint64]int // handler runs by tag and attempt

	// The NAT: owner and extOf map external addresses and hosts; fresh
	// hands out a new external address.
	owner map[netip.AddrPort]*host
	extOf map[*host]netip.AddrPort
	fresh func(ip int) netip.AddrPort

	calls   []*ixCall
	byTag   map[uint64]*ixCall
	clients []*ixClient
	replays int // late copies the network kept to deliver
}

// newInterplay draws the seed's network, configurations and server.
func newInterplay(t *testing.T, seed uint64, tot *ixTotals, mutate bool) *interplay {
	ix := &interplay{t: t, seed: seed, tot: tot, mutate: mutate}
	name := "TestSimInterplay"
	if mutate {
		name = "TestSimInterplayCorrupt"
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nreplay: go test ./internal/proto -run '^%s$' -sim.seed=%d -v",
			seed, fmt.Sprintf(format, args...), name, seed)
	}
	soft := func(format string, args ...any) {
		t.Helper()
		if !mutate {
			fail(format, args...)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x1417))
	pick := func(v ...float64) float64 { return v[rng.IntN(len(v))] }
	link := simnet.LinkConfig{
		Loss:         pick(0, 0.01, 0.05, 0.2),
		Dup:          pick(0.02, 0.05, 0.1),
		Reorder:      pick(0.02, 0.1),
		Delay:        time.Duration(pick(5, 50, 500, 3000)*(0.5+rng.Float64())) * time.Microsecond,
		Jitter:       time.Duration(rng.IntN(20)) * time.Microsecond,
		ReorderDelay: time.Duration(pick(5, 50, 300, 1500)) * time.Millisecond,
	}
	w := newWorld(t, seed, link)
	failure := time.Duration(pick(200, 1000)) * time.Millisecond
	base := Config{
		Window: []int{1, 2, 8}[rng.IntN(3)], Credits: []int{1, 4, 32}[rng.IntN(3)],
		FailureTimeout: failure, KeepaliveInterval: time.Duration(pick(100, 300, 1000)) * time.Millisecond,
		IdleTimeout: time.Duration(pick(150, 2000)) * time.Millisecond,
		Paths:       []int{1, 1, 2, 4}[rng.IntN(4)],
	}
	maxHalf := 2 + rng.IntN(3)
	halfTO := time.Duration(pick(30, 100, 300, 1000)) * time.Millisecond
	maxSess := []int{0, 0, 6, 10}[rng.IntN(4)]
	srvCfg := func() Config {
		c := base
		c.Paths = 1
		c.MaxHalfOpen = maxHalf
		c.HalfOpenTimeout = halfTO
		c.MaxSessions = maxSess
		c.Random = seedRandom(seed<<8 | 0x80 | ix.srvInc)
		c.CookieSeed[0], c.CookieSeed[1] = byte(seed), byte(ix.srvInc+1)
		return c
	}
	srv := w.addHost("server", "10.0.0.1:1", srvCfg())
	ix.fail, ix.soft, ix.rng, ix.pick, ix.link, ix.w = fail, soft, rng, pick, link, w
	ix.failure, ix.base, ix.maxHalf, ix.srvCfg, ix.srv = failure, base, maxHalf, srvCfg, srv
	return ix
}

// serveCountingRuns makes the server count runs per (tag, attempt) and
// answer at once or later.
func (ix *interplay) serveCountingRuns() {
	rng, w, srv, soft, tot := ix.rng, ix.w, ix.srv, ix.soft, ix.tot
	exec := map[uint64]int{}      // by tag
	execAt := map[[2]uint64]int{} // by tag and attempt
	byTag := map[uint64]*ixCall{}
	srvStats := func() {
		st := srv.e.Stats()
		tot.retries.Add(int64(st.RetriesSent))
		tot.migrations.Add(int64(st.Migrations))
		tot.challenges.Add(int64(st.PathChallenges))
		tot.reaped.Add(int64(st.HalfOpenReaped))
		tot.badCookies.Add(int64(st.BadCookies))
		tot.spentCookies.Add(int64(st.SpentCookies))
	}
	srv.onEvent = func(ev Event) {
		if ev.Type != EventRequest {
			return
		}
		h := ev.Req
		d := h.Data()
		if len(d) < 16 {
			soft("request of %d bytes", len(d))
			_ = srv.e.Respond(w.now, h, 0, nil)
			return
		}
		tag, att := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:])
		if exec[tag]++; exec[tag] > 1 {
			soft("request %d ran %d times (attempt %d)", tag, exec[tag], att)
		}
		execAt[[2]uint64{tag, att}]++
		if c := byTag[tag]; c != nil && c.notExec[att] {
			soft("request %d attempt %d ran after the client was told it never executed", tag, att)
		}
		e := srv.e
		respond := func() {
			if srv.e != e {
				return
			}
			if err := e.Respond(w.now, h, 0, h.Data()); err != nil && !errors.Is(err, ErrRequestGone) {
				soft("respond: %v", err)
			}
		}
		if rng.IntN(3) == 0 {
			w.at(w.now+Time(rng.IntN(20_000))*Time(time.Microsecond), respond)
		} else {
			respond()
		}
	}
	ix.execAt, ix.byTag, ix.srvStats = execAt, byTag, srvStats
}

// restartServerNowAndThen schedules one or two restarts of the server,
// graceful or not.
func (ix *interplay) restartServerNowAndThen() {
	rng, w, srv, tot, srvCfg, srvStats := ix.rng, ix.w, ix.srv, ix.tot, ix.srvCfg, ix.srvStats
	restartSrv := func(graceful bool) {
		if graceful {
			srv.e.CloseAll(w.now)
			w.flush()
		}
		srvStats()
		ix.srvInc++
		if ix.onSrvRestart != nil {
			ix.onSrvRestart()
		}
		tot.srvRestarts.Add(1)
		w.replace(srv, srvCfg())
	}
	for range 1 + rng.IntN(2) {
		g := rng.IntN(2) == 0
		w.at(Time(50+rng.IntN(1500))*Time(time.Millisecond), func() { restartSrv(g) })
	}
}
