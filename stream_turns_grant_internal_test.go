package erpc

import (
	"testing"

	"github.com/erpc-go/erpc/internal/stream"
)

// framesEndingAt is stream id's Data frames whose whole-frame prefix
// within limit ends exactly at limit-gap: a first frame padded to size,
// then tiny frames beyond limit.
func framesEndingAt(t *testing.T, id uint64, limit, gap int) []byte {
	t.Helper()
	var rest []byte
	for seq := uint64(1); len(rest) < 2*limit; seq++ {
		rest = stream.AppendData(rest, id, seq, []byte{byte(seq)})
	}
	k := stream.Cut(rest, limit-300, false)
	for pad := 0; pad < limit; pad++ {
		a := stream.AppendData(nil, id, 0, make([]byte, pad))
		if len(a)+k == limit-gap {
			return append(a, rest...)
		}
	}
	t.Fatal("no padding")
	return nil
}

// TestAnswerGrantOverMax: stream A's small frames fill an answer
// to a few bytes short of its max; stream B, next in the queue, has only
// a Grant due. The answer must stay within max (the batch limit, which
// is the session's message limit when WithMaxMessageSize is small).
func TestAnswerGrantOverMax(t *testing.T) {
	for _, limit := range []int{4096, 16 << 10} {
		for gap := 1; gap <= 4; gap++ {
			ss := &srvSession{streams: map[uint64]*serverStream{}}
			sa := &serverStream{ss: ss, id: 1, out: framesEndingAt(t, 1, limit, gap), queued: true}
			sb := &serverStream{ss: ss, id: 2, queued: true, recv: stream.NewReceiver(2, 1<<20, 1<<20)}
			if err := sb.recv.Accept(0, []byte("x")); err != nil {
				t.Fatal(err)
			}
			if _, ok := sb.recv.Next(); !ok || !sb.recv.GrantDue() {
				t.Fatal("no grant due")
			}
			ss.streams[1], ss.streams[2] = sa, sb
			ss.outq = []*serverStream{sa, sb}
			max := ss.pending(limit)
			out := ss.answer(make([]byte, 0, max), max)
			if len(out) > max {
				t.Errorf("limit %d, gap %d: an answer of %d bytes, over its max of %d (the batch limit: the message limit when WithMaxMessageSize is small)", limit, gap, len(out), max)
			}
		}
	}
}

// TestExchangeGrantOverMax: the same on the client's side: a
// client stream's frames fill an exchange near its max and the next has
// a Grant due.
func TestExchangeGrantOverMax(t *testing.T) {
	for _, limit := range []int{4096, 16 << 10} {
		for gap := 1; gap <= 4; gap++ {
			cs := &cliSession{streams: map[uint64]*clientStream{}}
			ca := &clientStream{cs: cs, id: 1, out: framesEndingAt(t, 1, limit-1, gap), queued: true} // after the flag byte
			cb := &clientStream{cs: cs, id: 2, queued: true, recv: stream.NewReceiver(2, 1<<20, 1<<20)}
			if err := cb.recv.Accept(0, []byte("x")); err != nil {
				t.Fatal(err)
			}
			cb.recv.Next()
			cs.streams[1], cs.streams[2] = ca, cb
			cs.outq = []*clientStream{ca, cb}
			out := cs.fill([]byte{0}, limit)
			if len(out) > limit {
				t.Errorf("limit %d, gap %d: an exchange of %d bytes, over its max of %d", limit, gap, len(out), limit)
			}
		}
	}
}
