package stream

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestWindowSeeds runs one direction of a stream over a channel that
// delivers batches of frames in any order, duplicates some, and returns
// grants out of order too, for many seeds: every message arrives exactly
// once and in order, the receiver never holds more than its window, and
// the sender never stalls for good.
func TestWindowSeeds(t *testing.T) {
	var dups, reordered int
	for seed := range uint64(300) {
		d, r := runWindow(t, seed)
		dups += d
		reordered += r
	}
	if dups == 0 || reordered == 0 {
		t.Fatalf("no fault injected: %d duplicates, %d reorders", dups, reordered)
	}
}

func runWindow(t *testing.T, seed uint64) (dups, reordered int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e37))
	w := 1 + rng.IntN(16)
	bw := 1 + rng.IntN(4096)
	const maxMsg = 2048
	total := uint64(50 + rng.IntN(200))
	snd := NewSender(uint64(w), uint64(bw))
	rcv := NewReceiver(w, bw, maxMsg)
	var inflight [][]byte // batches of frames
	var grants [][2]uint64
	msgOf := func(seq uint64) []byte {
		n := int(seq*7919+seed) % (maxMsg + 1)
		if seq%5 == 0 {
			n %= 16
		}
		b := bytes.Repeat([]byte{byte(seq)}, n)
		if n >= 8 {
			binary.LittleEndian.PutUint64(b, seq)
		}
		return b
	}
	var got uint64
	for steps := 0; got < total || !rcv.Done(); steps++ {
		if steps > 1_000_000 {
			t.Fatalf("seed %d: stalled at %d of %d (window %d/%d)", seed, got, total, w, bw)
		}
		switch rng.IntN(4) {
		case 0: // send what the credit allows, in one batch
			var batch []byte
			for snd.Count() < total && snd.CanSend() && rng.IntN(4) != 0 {
				seq := snd.Count()
				m := msgOf(seq)
				batch = AppendData(batch, 1, snd.Sent(len(m)), m)
			}
			if snd.Count() == total && !snd.Closed() {
				batch = AppendClose(batch, 1, snd.Close())
			}
			if len(batch) > 0 {
				inflight = append(inflight, batch)
			}
		case 1: // deliver a batch, any of them, sometimes twice
			if len(inflight) == 0 {
				continue
			}
			i := rng.IntN(len(inflight))
			if i != 0 {
				reordered++
			}
			batch := inflight[i]
			if rng.IntN(8) == 0 {
				dups++
			} else {
				inflight = append(inflight[:i], inflight[i+1:]...)
			}
			var rd Reader
			rd.Reset(batch)
			var f Frame
			for rd.Next(&f) {
				switch f.Kind {
				case KindData:
					if err := rcv.Accept(f.Seq, f.Data); err != nil && err != ErrDuplicate {
						t.Fatalf("seed %d: %v", seed, err)
					}
				case KindClose:
					if err := rcv.End(f.Seq); err != nil {
						t.Fatalf("seed %d: end: %v", seed, err)
					}
				}
			}
			if rd.Err() != nil {
				t.Fatal(rd.Err())
			}
			if n, b := rcv.Buffered(); n > w || b > uint64(bw+maxMsg) {
				t.Fatalf("seed %d: holds %d messages, %d bytes, window %d/%d", seed, n, b, w, bw)
			}
		case 2: // the application consumes
			for rng.IntN(3) != 0 {
				m, ok := rcv.Next()
				if !ok {
					break
				}
				if !bytes.Equal(m, msgOf(got)) {
					t.Fatalf("seed %d: message %d wrong or out of order", seed, got)
				}
				got++
			}
			if rcv.GrantDue() {
				m, b := rcv.TakeGrant()
				grants = append(grants, [2]uint64{m, b})
			}
		case 3: // a grant arrives, in any order
			if len(grants) > 0 {
				i := rng.IntN(len(grants))
				if snd.Grant(grants[i][0], grants[i][1]) {
					t.Fatalf("seed %d: an honest receiver's grant %v was clamped", seed, grants[i])
				}
				grants = append(grants[:i], grants[i+1:]...)
			}
		}
	}
	if got != total || rcv.Delivered() != total {
		t.Fatalf("seed %d: delivered %d of %d", seed, got, total)
	}
	return dups, reordered
}

// TestReceiverRefusesHostileFrames: frames a correct sender never sends
// are refused without changing what is delivered.
func TestReceiverRefusesHostileFrames(t *testing.T) {
	r := NewReceiver(4, 100, 50)
	if err := r.Accept(4, nil); err != ErrOutOfWindow {
		t.Fatalf("beyond the message window: %v", err)
	}
	if err := r.Accept(1<<63, nil); err != ErrOutOfWindow {
		t.Fatalf("huge sequence number: %v", err)
	}
	if err := r.Accept(0, make([]byte, 51)); err != ErrOutOfWindow {
		t.Fatalf("over the message size: %v", err)
	}
	for i := range uint64(2) {
		if err := r.Accept(i, make([]byte, 50)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := r.Accept(2, make([]byte, 51)); err != ErrOutOfWindow {
		t.Fatalf("over the byte window plus one message: %v", err)
	}
	if err := r.Accept(0, []byte("x")); err != ErrDuplicate {
		t.Fatalf("duplicate: %v", err)
	}
	if err := r.End(9); err != ErrBadEnd {
		t.Fatalf("end beyond the window: %v", err)
	}
	if err := r.End(1); err != ErrBadEnd {
		t.Fatalf("end below a buffered message: %v", err)
	}
	if err := r.End(2); err != nil {
		t.Fatal(err)
	}
	if err := r.Accept(2, nil); err != ErrBeyondEnd {
		t.Fatalf("beyond the end: %v", err)
	}
	if err := r.End(3); err != ErrBadEnd {
		t.Fatalf("a second, different end: %v", err)
	}
	if n, b := r.HighWater(); n != 2 || b != 100 {
		t.Fatalf("high water %d, %d", n, b)
	}
}

// FuzzReader: the frame parser never panics, and what it parses encodes
// back to the same bytes.
func FuzzReader(f *testing.F) {
	f.Add(AppendData(nil, 1, 2, []byte("hi")))
	f.Add(AppendEnd(AppendHeader(nil, 3, []byte{0}), 3, 7, 2, []byte("no"), []byte{0}))
	f.Add(AppendGrant(AppendCancel(AppendClose(nil, 1, 5), 2, 1), 4, 10, 1000))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Reader
		r.Reset(b)
		var fr Frame
		var out []byte
		for r.Next(&fr) {
			out = appendFrame(out, &fr)
		}
		if r.Err() == nil && !bytes.Equal(out, b) {
			// Uvarints have several encodings; the frames must agree.
			var r2 Reader
			r2.Reset(out)
			var f2 Frame
			r.Reset(b)
			for r.Next(&fr) {
				if !r2.Next(&f2) || !sameFrame(&fr, &f2) {
					t.Fatalf("round trip differs: %x -> %x", b, out)
				}
			}
		}
		_ = Cut(out, len(out)/2, true)
	})
}

func appendFrame(b []byte, f *Frame) []byte {
	switch f.Kind {
	case KindData:
		return AppendData(b, f.Stream, f.Seq, f.Data)
	case KindClose:
		return AppendClose(b, f.Stream, f.Seq)
	case KindCancel:
		return AppendCancel(b, f.Stream, f.Code)
	case KindGrant:
		return AppendGrant(b, f.Stream, f.MsgLimit, f.ByteLimit)
	case KindHeader:
		return AppendHeader(b, f.Stream, f.Meta)
	case KindEnd:
		return AppendEnd(b, f.Stream, f.Seq, f.Code, f.Data, f.Meta)
	}
	panic("unknown kind parsed")
}

func sameFrame(a, b *Frame) bool {
	return a.Kind == b.Kind && a.Stream == b.Stream && a.Seq == b.Seq && a.MsgLimit == b.MsgLimit &&
		a.ByteLimit == b.ByteLimit && a.Code == b.Code && bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Meta, b.Meta)
}

// TestCut: a cut keeps whole frames, at least one.
func TestCut(t *testing.T) {
	b := AppendData(nil, 1, 0, make([]byte, 100))
	one := len(b)
	b = AppendData(b, 1, 1, make([]byte, 10))
	if n := Cut(b, 50, true); n != one {
		t.Fatalf("cut at %d, want the first frame (%d)", n, one)
	}
	if n := Cut(b, 50, false); n != 0 {
		t.Fatalf("cut at %d, want nothing", n)
	}
	if n := Cut(b, len(b), false); n != len(b) {
		t.Fatalf("cut at %d of %d", n, len(b))
	}
}
