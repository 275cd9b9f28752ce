package erpc

import "testing"

// TestStreamOutputBufferReuse: a drained output buffer larger than
// keptOutBytes leaves the stream; a stream whose last use was large
// gets a pooled one for its next frames, and one whose use turned small
// goes back to a small buffer of its own; a small buffer stays.
func TestStreamOutputBufferReuse(t *testing.T) {
	var u outUse
	small := make([]byte, 10, keptOutBytes)
	if got := u.drained(small[:0], 10); cap(got) != keptOutBytes {
		t.Fatalf("a small drained buffer: cap %d, want it kept", cap(got))
	}
	big := make([]byte, 0, 4*keptOutBytes)
	if got := u.drained(big, 3*keptOutBytes); got != nil {
		t.Fatalf("a large drained buffer stayed with the stream (cap %d)", cap(got))
	}
	if !u.large {
		t.Fatal("a large use was not remembered")
	}
	reused := 0
	for range 10 { // sync.Pool may drop what it holds (a collection, the race detector): count
		out := u.grow(nil, 100)
		if cap(out) >= 4*keptOutBytes {
			reused++
		}
		if u.large {
			t.Fatal("a buffer taken for the next frames left the stream marked large")
		}
		out = append(out, make([]byte, 100)...)
		if got := u.drained(out[:0], 100); got != nil && cap(got) > keptOutBytes {
			t.Fatalf("a large buffer stayed after a small use (cap %d)", cap(got))
		}
		if u.large {
			t.Fatal("a small use left the stream marked large")
		}
		if out := u.grow(nil, 100); cap(out) > keptOutBytes {
			t.Fatalf("a stream whose use turned small took a pooled buffer (cap %d)", cap(out))
		}
		u.large = true                 // as after a large use, for the next round
		if cap(out) < 4*keptOutBytes { // the pool dropped it: another, so that each round is a try
			fresh := make([]byte, 0, 4*keptOutBytes)
			outPool.Put(&fresh)
		}
	}
	t.Logf("pooled buffer reused in %d of 10 rounds", reused)
	if reused == 0 { // the race detector drops a quarter of Puts: ten rounds in a row is 1e-6

		t.Fatal("the pooled buffer was never reused")
	}
}
