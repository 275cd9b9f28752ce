package erpc

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/erpc-go/erpc/internal/stream"
)

// fakeTaker is a stream's queued frames for takeTurns, taking its turns
// as serverStream and clientStream do (turnCut), and logging each.
type fakeTaker struct {
	id        int
	orig, out []byte // all its frames; those not yet taken
	took      []byte // frames taken, in order
	log       *[]turn
	all       *[]*fakeTaker // every stream of the run
}

// turn is one turn a stream took: its bytes and frames, the size
// takeTurns gave it, and how many streams had output then.
type turn struct{ id, bytes, frames, size, live int }

func (f *fakeTaker) takeTurn(b []byte, start, max, size int) ([]byte, bool, bool) {
	if len(f.out) == 0 {
		return b, false, true
	}
	n := turnCut(f.out, max-len(b), size, len(b) == start)
	if n == 0 {
		return b, true, false
	}
	live := 0
	for _, g := range *f.all {
		if len(g.out) > 0 {
			live++
		}
	}
	*f.log = append(*f.log, turn{f.id, n, countFrames(f.out[:n]), size, live})
	b = append(b, f.out[:n]...)
	f.took = append(f.took, f.out[:n]...)
	f.out = f.out[n:]
	return b, len(f.out) > 0, true
}

func countFrames(b []byte) int {
	var r stream.Reader
	r.Reset(b)
	var f stream.Frame
	n := 0
	for r.Next(&f) {
		n++
	}
	return n
}

// randomFrames is at least total bytes of Data frames: mostly small,
// some of kilobytes, a few up to one and a half turns (larger than some
// batches).
func randomFrames(rng *rand.Rand, id uint64, total int) []byte {
	var b []byte
	for seq := uint64(0); len(b) < total; seq++ {
		size := rng.IntN(64)
		switch rng.IntN(10) {
		case 0:
			size = rng.IntN(3 * streamTurn / 2)
		case 1, 2:
			size = rng.IntN(8 << 10)
		}
		b = stream.AppendData(b, id, seq, make([]byte, size))
	}
	return b
}

// TestTakeTurnsFair drives takeTurns over random streams, batch sizes and
// arrivals: every stream's frames go whole, once and in order; no batch
// is empty while streams have output; a batch is over max only when it
// is one frame, and a turn over its size only when it is one frame; a
// turn is a turn's size unless the stream is alone; and between two
// turns of a stream, no other stream has two (none waits behind
// another's backlog).
func TestTakeTurnsFair(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var log []turn
		var all, q []*fakeTaker
		add := func() {
			f := &fakeTaker{id: len(all), log: &log, all: &all}
			f.orig = randomFrames(rng, uint64(f.id), rng.IntN(300<<10))
			f.out = f.orig
			log = append(log, turn{id: f.id, frames: -1}) // it joins: it waits from now
			all = append(all, f)
			q = append(q, f)
		}
		for range 1 + rng.IntN(12) {
			add()
		}
		max := []int{16 << 10, 64 << 10, 256 << 10, 1 << 20}[rng.IntN(4)]
		start := rng.IntN(2)
		for batches := 0; len(q) > 0; batches++ {
			if batches > 100000 {
				t.Fatalf("seed %d: no end", seed)
			}
			first := len(log)
			var b []byte
			b, q = takeTurns(q, make([]byte, start, max), start, max)
			frames := 0
			for _, tn := range log[first:] {
				if tn.frames < 0 {
					continue
				}
				frames += tn.frames
				if tn.bytes > tn.size && tn.frames > 1 {
					t.Fatalf("seed %d: a turn of %d bytes, %d frames, over its %d", seed, tn.bytes, tn.frames, tn.size)
				}
				if tn.size != streamTurn && !(tn.live == 1 && tn.size == max) {
					t.Fatalf("seed %d: a turn of size %d with %d streams with output", seed, tn.size, tn.live)
				}
			}
			if len(b) == start && len(q) > 0 {
				t.Fatalf("seed %d: an empty batch with %d streams queued", seed, len(q))
			}
			if len(b) > max && frames > 1 {
				t.Fatalf("seed %d: a batch of %d bytes, %d frames, over %d", seed, len(b), frames, max)
			}
			if rng.IntN(20) == 0 { // a stream gets output between batches
				add()
			}
		}
		for _, f := range all {
			if len(f.out) != 0 || !bytes.Equal(f.took, f.orig) {
				t.Fatalf("seed %d: stream %d's frames did not go whole, once, in order", seed, f.id)
			}
		}
		checkTurnOrder(t, seed, log, len(all))
	}
}

// checkTurnOrder fails if, between two turns of a stream, or between its
// joining and its first turn, another stream had two.
func checkTurnOrder(t *testing.T, seed uint64, log []turn, streams int) {
	t.Helper()
	since := make([][]int, streams) // since[x][y]: y's turns since x's last
	for x := range since {
		since[x] = make([]int, streams)
	}
	for _, tn := range log {
		x := tn.id
		if tn.frames < 0 { // x joins
			clear(since[x])
			continue
		}
		for y, n := range since[x] {
			if n > 1 {
				t.Fatalf("seed %d: stream %d had %d turns while stream %d waited for one", seed, y, n, x)
			}
		}
		clear(since[x])
		for y := range since {
			if y != x {
				since[y][x]++
			}
		}
	}
}

// TestStreamAnswerTakesTurns: a stream with 2 MiB queued (a slow
// reader's window, say) ahead of another's few messages does not hold
// them back: the server's next answer carries both, a turn of the first
// and then the second's messages, and so does a client's next exchange.
func TestStreamAnswerTakesTurns(t *testing.T) {
	msg := make([]byte, 4096)
	frames := func(id uint64, n int) []byte {
		var b []byte
		for seq := range n {
			b = stream.AppendData(b, id, uint64(seq), msg)
		}
		return b
	}
	// got is the message bytes of each stream in batch, and where the
	// second stream's first frame starts.
	got := func(batch []byte) (map[uint64]int, int) {
		var r stream.Reader
		r.Reset(batch)
		var f stream.Frame
		m, at := map[uint64]int{}, -1
		for off := 0; r.Next(&f); off = len(batch) - len(r.Rest()) {
			if f.Stream == 2 && at < 0 {
				at = off
			}
			m[f.Stream] += len(f.Data)
		}
		return m, at
	}
	ss := &srvSession{streams: map[uint64]*serverStream{}}
	slow := &serverStream{ss: ss, id: 1, out: frames(1, 512), queued: true}
	fast := &serverStream{ss: ss, id: 2, out: frames(2, 8), queued: true}
	ss.streams[1], ss.streams[2] = slow, fast
	ss.outq = []*serverStream{slow, fast}
	m, at := got(ss.answer(nil, 1<<20))
	if m[2] != 8*len(msg) || at > streamTurn || len(ss.outq) != 1 || ss.outq[0] != slow {
		t.Fatalf("server answer: the other stream's %d of %d bytes, from offset %d; queue %d", m[2], 8*len(msg), at, len(ss.outq))
	}
	cs := &cliSession{}
	cslow := &clientStream{cs: cs, id: 1, out: frames(1, 512), queued: true}
	cfast := &clientStream{cs: cs, id: 2, out: frames(2, 8), queued: true}
	cs.outq = []*clientStream{cslow, cfast}
	m, at = got(cs.fill([]byte{0}, 1<<20)[1:])
	if m[2] != 8*len(msg) || at > streamTurn || len(cs.outq) != 1 || cs.outq[0] != cslow {
		t.Fatalf("client exchange: the other stream's %d of %d bytes, from offset %d; queue %d", m[2], 8*len(msg), at, len(cs.outq))
	}
}
