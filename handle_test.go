package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// The tests of this file attack the Request handle from goroutines that
// keep it (issue 27): its accessors while the endpoint recycles the memory
// behind it, and several answers to one request at once.

// handleReq is what the clients of these tests send: a call's id, the
// size of the response it wants, a seed for the server's choices, and how
// many goroutines are to answer it at once (racing answers only).
type handleReq struct {
	id, seed uint64
	size     int
	racers   int
}

func (q handleReq) encode() []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b, q.id)
	binary.LittleEndian.PutUint64(b[8:], q.seed)
	binary.LittleEndian.PutUint32(b[16:], uint32(q.size))
	binary.LittleEndian.PutUint32(b[20:], uint32(q.racers))
	return b
}

func decodeHandleReq(b []byte) handleReq {
	return handleReq{
		id:     binary.LittleEndian.Uint64(b),
		seed:   binary.LittleEndian.Uint64(b[8:]),
		size:   int(binary.LittleEndian.Uint32(b[16:])),
		racers: int(binary.LittleEndian.Uint32(b[20:])),
	}
}

// answerBytes is answerer g's response to call id: different for every
// call and every answerer, so a byte of another shows.
func answerBytes(dst []byte, id uint64, g int) []byte {
	for j := range dst {
		dst[j] = byte(id) ^ byte(g*37+1) ^ byte(j*7+j>>8)
	}
	return dst
}

// handleSizes draws a response size: half of them small (Respond copies
// those), half spanning several packets.
func handleSizes(rng *rand.Rand) int {
	if rng.IntN(2) == 0 {
		return 1 + rng.IntN(256)
	}
	return 1024 + rng.IntN(32<<10)
}

// handleReads counts what the goroutines that keep handles read.
type handleReads struct {
	live, spent atomic.Int64
	wrong       atomic.Int64 // another request's value, or a spent handle that was not
}

// hammer reads every accessor of r, which the handler saw live with the
// values want*, and checks each is either that value or the zero value of
// a spent handle. It also writes into the memory ResponseBuffer gives it,
// which must never reach an answer.
func (c *handleReads) hammer(t *testing.T, r erpc.Request, id uint64, method string, peer any, dl time.Time, n int) {
	spent := false
	if m := r.Method(); m == "" {
		spent = true
	} else if m != method {
		c.wrong.Add(1)
		t.Errorf("call %d: Method %q, want %q", id, m, method)
	}
	if p := r.Peer(); p.IsValid() && any(p) != peer {
		c.wrong.Add(1)
		t.Errorf("call %d: Peer %v, want %v", id, p, peer)
	}
	if md := r.Metadata(); md != nil && md.Get("id") != strconv.FormatUint(id, 10) {
		c.wrong.Add(1)
		t.Errorf("call %d: Metadata of call %s", id, md.Get("id"))
	}
	if d, ok := r.Deadline(); ok && !d.Equal(dl) {
		c.wrong.Add(1)
		t.Errorf("call %d: Deadline %v, want %v", id, d, dl)
	}
	if d := r.Data(); d != nil && len(d) != 24 {
		c.wrong.Add(1)
		t.Errorf("call %d: Data of %d bytes, want 24", id, len(d))
	}
	ctx := r.Context()
	if md, ok := erpc.IncomingMetadata(ctx); ok && md.Get("id") != strconv.FormatUint(id, 10) {
		c.wrong.Add(1)
		t.Errorf("call %d: Context of call %s", id, md.Get("id"))
	}
	if spent && ctx.Err() == nil {
		c.wrong.Add(1)
		t.Errorf("call %d: a spent handle's Context is not canceled", id)
	}
	b := r.ResponseBuffer(n)
	for i := range b {
		b[i] = 0xEE
	}
	if spent {
		c.spent.Add(1)
	} else {
		c.live.Add(1)
	}
}

// TestKeptHandleHammered: handlers, inline and background, give their
// Request to goroutines that read every accessor and scribble into
// ResponseBuffer before, during and long after the answer, while many
// calls keep the endpoint recycling requests. No read panics or races;
// every read is the request's own value or a spent handle's zero value
// (and some reads do hit spent handles); every response arrives as the
// handler built it.
func TestKeptHandleHammered(t *testing.T) {
	checkLeaks(t)
	const clients, callsEach = 6, 80
	var reads handleReads
	var keepers sync.WaitGroup
	stop := make(chan struct{}) // the calls are over: the long keepers may stop
	serve := func(method string) func(r erpc.Request) {
		return func(r erpc.Request) {
			q := decodeHandleReq(r.Data())
			rng := rand.New(rand.NewPCG(q.seed, 1))
			peer, dl := any(r.Peer()), time.Time{}
			dl, _ = r.Deadline()
			answered := make(chan struct{})
			for k := range 1 + rng.IntN(3) {
				long := rng.IntN(32) == 0 // keeps reading until every call is over
				after := 20 + rng.IntN(200)
				keepers.Go(func() {
					for i := 0; ; i++ {
						reads.hammer(t, r, q.id, method, peer, dl, 1+(i*131+k)%512)
						if i%8 == 0 {
							runtime.Gosched()
						}
						select {
						case <-answered:
							if after--; after > 0 {
								continue
							}
							if !long {
								return
							}
							select {
							case <-stop:
								return
							case <-time.After(200 * time.Microsecond):
							}
						default:
						}
					}
				})
			}
			answer := func() {
				for range rng.IntN(4) { // let the keepers read it live
					runtime.Gosched()
				}
				var out []byte
				if rng.IntN(2) == 0 {
					out = r.ResponseBuffer(q.size)
				} else {
					out = make([]byte, q.size)
				}
				if err := r.Respond(answerBytes(out, q.id, 0)); err != nil {
					t.Errorf("call %d: the only answer failed: %v", q.id, err)
				}
				if r.Method() != "" || r.Data() != nil || r.Context().Err() == nil {
					reads.wrong.Add(1)
					t.Errorf("call %d: the handle is not spent after its answer", q.id)
				}
				close(answered)
			}
			if rng.IntN(3) == 0 {
				keepers.Go(answer) // answered from another goroutine, maybe after the handler returned
			} else {
				answer()
			}
		}
	}
	srv := erpc.NewServer()
	if err := srv.HandleRaw("KeepInline", serve("KeepInline")); err != nil {
		t.Fatal(err)
	}
	if err := srv.HandleRaw("KeepBackground", serve("KeepBackground"), erpc.Background()); err != nil {
		t.Fatal(err)
	}
	n := newMemNet()
	sep := n.Listen(t, srv)
	var calls sync.WaitGroup
	var bad atomic.Int64
	for c := range clients {
		s := dialT(t, n, n.Listen(t, nil), sep)
		calls.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 27))
			var resp []byte
			for i := range callsEach {
				q := handleReq{id: uint64(c*callsEach + i), seed: rng.Uint64(), size: handleSizes(rng)}
				method := []string{"KeepInline", "KeepBackground"}[rng.IntN(2)]
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				ctx = erpc.AppendToOutgoingContext(ctx, "id", strconv.FormatUint(q.id, 10))
				var err error
				resp, err = s.Call(ctx, method, q.encode(), resp)
				cancel()
				if err != nil {
					t.Errorf("call %d: %v", q.id, err)
					return
				}
				if want := answerBytes(make([]byte, q.size), q.id, 0); !bytes.Equal(resp, want) {
					bad.Add(1)
				}
			}
		})
	}
	calls.Wait()
	close(stop)
	keepers.Wait()
	t.Logf("reads of kept handles: %d live, %d spent", reads.live.Load(), reads.spent.Load())
	if b := bad.Load(); b > 0 {
		t.Errorf("%d of %d responses were not the bytes their handler answered", b, clients*callsEach)
	}
	if reads.wrong.Load() > 0 {
		t.Errorf("%d reads of a kept handle gave another request's values or a spent handle's that were not zero", reads.wrong.Load())
	}
	if reads.spent.Load() == 0 || reads.live.Load() == 0 {
		t.Fatalf("the attack missed: %d reads of live handles, %d of spent ones", reads.live.Load(), reads.spent.Load())
	}
}

// scribbles are what losing answerers write over their buffers.
var scribbles = [2][]byte{bytes.Repeat([]byte{0xA5}, 64<<10), bytes.Repeat([]byte{0x5A}, 64<<10)}

// TestRacingAnswers: 2 to 8 goroutines answer each request at once, each
// with its own bytes, built in ResponseBuffer or in a slice of its own;
// the losers then keep writing into the memory they built in. Exactly one
// Respond succeeds, and the client gets that answerer's bytes exactly, at
// sizes that Respond copies and sizes that span packets.
func TestRacingAnswers(t *testing.T) {
	checkLeaks(t)
	const clients, callsEach = 6, 100
	var racers sync.WaitGroup
	var winners sync.Map // call id -> the answerer whose Respond succeeded
	var doubleWins, losses atomic.Int64
	serve := func(background bool) func(r erpc.Request) {
		return func(r erpc.Request) {
			q := decodeHandleReq(r.Data())
			rng := rand.New(rand.NewPCG(q.seed, 2))
			start := make(chan struct{})
			var all sync.WaitGroup
			for g := range q.racers {
				inBuf := rng.IntN(2) == 0
				all.Add(1)
				racers.Go(func() {
					defer all.Done()
					<-start
					var out []byte
					if inBuf {
						out = r.ResponseBuffer(q.size)
					} else {
						out = make([]byte, q.size)
					}
					answerBytes(out, q.id, g)
					if r.Respond(out) == nil {
						if _, dup := winners.LoadOrStore(q.id, g); dup {
							doubleWins.Add(1)
						}
						return
					}
					losses.Add(1)
					later := r.ResponseBuffer(q.size) // a spent handle's
					for pass := range 40 {            // while the loop sends the winner's answer
						copy(out, scribbles[pass%2])
						copy(later, scribbles[pass%2])
						runtime.Gosched()
					}
				})
			}
			close(start)
			if background {
				all.Wait() // the run's reference held until every answerer is done
			}
		}
	}
	srv := erpc.NewServer()
	if err := srv.HandleRaw("RaceInline", serve(false)); err != nil {
		t.Fatal(err)
	}
	if err := srv.HandleRaw("RaceBackground", serve(true), erpc.Background()); err != nil {
		t.Fatal(err)
	}
	n := newMemNet()
	sep := n.Listen(t, srv)
	var calls sync.WaitGroup
	got := make([][]int, clients) // per client, per call: the answerer whose bytes arrived (-1: none)
	for c := range clients {
		s := dialT(t, n, n.Listen(t, nil), sep)
		got[c] = make([]int, callsEach)
		calls.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 4))
			var resp []byte
			for i := range callsEach {
				q := handleReq{id: uint64(c*callsEach + i), seed: rng.Uint64(), size: handleSizes(rng), racers: 2 + rng.IntN(7)}
				method := []string{"RaceInline", "RaceBackground"}[rng.IntN(2)]
				var err error
				resp, err = s.Call(context.Background(), method, q.encode(), resp)
				if err != nil {
					t.Errorf("call %d: %v", q.id, err)
					return
				}
				got[c][i] = -1
				for g := range q.racers {
					if bytes.Equal(resp, answerBytes(make([]byte, q.size), q.id, g)) {
						got[c][i] = g
					}
				}
			}
		})
	}
	calls.Wait()
	racers.Wait()
	wrong := 0
	for c := range clients {
		for i, g := range got[c] {
			id := uint64(c*callsEach + i)
			w, ok := winners.Load(id)
			if !ok || g != w.(int) {
				wrong++
				if wrong <= 5 {
					t.Errorf("call %d: the client got the bytes of answerer %d; the answer that succeeded was %v (%v)", id, g, w, ok)
				}
			}
		}
	}
	if wrong > 0 || doubleWins.Load() > 0 {
		t.Fatalf("%d of %d calls did not get the winning answer byte for byte; %d requests had two winners",
			wrong, clients*callsEach, doubleWins.Load())
	}
	if losses.Load() == 0 {
		t.Fatal("the attack missed: no answer lost a race")
	}
	t.Logf("%d answers lost their race", losses.Load())
}
