package erpc

import (
	"slices"

	"github.com/erpc-go/erpc/internal/stream"
)

// streamTurn is the most one stream puts in a batch before the other
// streams with output have had their turn: a stream with a window of
// backlog (a slow reader's 4 MiB, say) delays another's next message by
// one turn per stream, not by its whole backlog. 64 KiB keeps a bulk
// stream's frames in few turns; a frame larger than a turn is a turn of
// its own.
const streamTurn = 64 << 10

// turnTaker is a stream with queued output (a serverStream, whose output
// goes in an answer, or a clientStream, whose goes in an exchange).
type turnTaker interface {
	// takeTurn moves up to turn bytes of the stream's output to the
	// batch b, within max bytes: whole frames, at least one if b is still
	// at start (the batch's own header). more says output is left; fits
	// is false if its next frame had no room (then it took no frame).
	takeTurn(b []byte, start, max, turn int) (_ []byte, more, fits bool)
}

// takeTurns fills the batch b, up to max bytes, from the streams queued
// in q, a turn each in q's order, round after round, and returns it with
// the streams that still have output, in the order of their next turns.
// The batch ends when it is full or its room is too small for the next
// stream's next frame; the streams whose turn it did not reach then go
// first in the next batch, so each stream waits at most one turn of each
// of the others (and the batches already out).
func takeTurns[S turnTaker](q []S, b []byte, start, max int) ([]byte, []S) {
	kept, i := 0, 0 // q[:kept]: served this round, with output left; q[i:]: not served yet
	for len(q) > 0 {
		if i == len(q) { // the round is over: the next
			clear(q[kept:])
			q, kept, i = q[:kept], 0, 0
			continue
		}
		if len(b) >= max {
			break
		}
		turn := streamTurn
		if len(q) == 1 { // alone: nobody waits, and no frames need counting
			turn = max
		}
		var more, fits bool
		b, more, fits = q[i].takeTurn(b, start, max, turn)
		if !fits {
			break
		}
		if more {
			q[kept] = q[i]
			kept++
		}
		i++
	}
	if i == 0 || len(q) == 0 {
		return b, q
	}
	// Those not served go first, then those served, each in its order.
	end := kept + copy(q[kept:], q[i:])
	clear(q[end:])
	q = q[:end]
	slices.Reverse(q[:kept])
	slices.Reverse(q[kept:])
	slices.Reverse(q)
	return b, q
}

// turnCut is how much of the frames out a turn of turn bytes takes into
// a batch with room bytes left: whole frames, at least one, but none if
// that one does not fit the room, unless it is the batch's first (a
// frame larger than a batch goes alone). out is not empty.
func turnCut(out []byte, room, turn int, first bool) int {
	if len(out) <= min(room, turn) {
		return len(out)
	}
	k := stream.Cut(out, min(room, turn), true)
	if k > room && !first {
		return 0
	}
	return k
}
