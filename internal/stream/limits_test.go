package stream

import (
	"math/rand/v2"
	"testing"
)

// TestSenderClampsHostileGrants: whatever grants a peer sends, in any
// order, the sender never gets more than the window it was announced
// ahead of what it sent, and each grant beyond that is reported.
func TestSenderClampsHostileGrants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		w, bw := uint64(1+rng.IntN(64)), uint64(1+rng.IntN(1<<16))
		s := NewSender(w, bw)
		hostile, clamped := 0, 0
		for range 50 {
			for s.CanSend() && rng.IntN(4) != 0 {
				s.Sent(rng.IntN(1000))
			}
			m, b := rng.Uint64N(s.next+2*w+1), rng.Uint64N(s.sentBytes+2*bw+1)
			if rng.IntN(8) == 0 {
				m, b = 1<<62, 1<<62
			}
			if m > s.next+w || b > s.sentBytes+bw {
				hostile++
			}
			if s.Grant(m, b) {
				clamped++
			}
			if s.msgLimit > s.next+w || s.byteLimit > s.sentBytes+bw {
				t.Fatalf("iteration %d: limits %d/%d after %d messages, %d bytes sent, window %d/%d",
					iter, s.msgLimit, s.byteLimit, s.next, s.sentBytes, w, bw)
			}
		}
		if clamped != hostile {
			t.Fatalf("iteration %d: %d grants beyond the window, %d reported", iter, hostile, clamped)
		}
	}
}

// TestReceiverKeepsLittleAfterBurst: after a window's burst of large
// messages, all delivered, the receiver's free list holds at most
// KeptFreeBytes; small messages in steady state still reuse it.
func TestReceiverKeepsLittleAfterBurst(t *testing.T) {
	const w, size = 64, 64 << 10
	r := NewReceiver(w, w*size, size)
	msg := make([]byte, size)
	for seq := range uint64(w) {
		if err := r.Accept(seq, msg); err != nil {
			t.Fatal(err)
		}
	}
	for range w {
		if _, ok := r.Next(); !ok {
			t.Fatal("missing message")
		}
	}
	r.Next() // the application is done with the last one
	if r.freeBytes > KeptFreeBytes {
		t.Fatalf("the free list keeps %d bytes after the burst, want at most %d", r.freeBytes, KeptFreeBytes)
	}
	small := make([]byte, 32)
	seq := uint64(w)
	step := func() {
		if err := r.Accept(seq, small); err != nil {
			t.Fatal(err)
		}
		seq++
		r.Next()
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("%v allocations per small message in steady state", n)
	}
}
