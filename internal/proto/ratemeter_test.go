package proto

import (
	"testing"
	"time"
)

func TestPerSecond(t *testing.T) {
	at := func(d time.Duration) Time { return Time(d) }
	var m perSecond
	for range 3 {
		m.add(at(10*time.Second + time.Millisecond))
	}
	if got := m.last(at(10*time.Second + 500*time.Millisecond)); got != 0 {
		t.Fatalf("during the first second: %d, want 0 (no complete second yet)", got)
	}
	if got := m.last(at(11 * time.Second)); got != 3 {
		t.Fatalf("the second after: %d, want 3", got)
	}
	m.add(at(11*time.Second + time.Millisecond))
	if got := m.last(at(11*time.Second + 2*time.Millisecond)); got != 3 {
		t.Fatalf("while counting the next: %d, want 3", got)
	}
	if got := m.last(at(12 * time.Second)); got != 1 {
		t.Fatalf("next second: %d, want 1", got)
	}
	if got := m.last(at(13 * time.Second)); got != 0 {
		t.Fatalf("after a quiet second: %d, want 0", got)
	}
	m.add(at(20 * time.Second)) // a gap: the old count must not leak in
	if got := m.last(at(20*time.Second + 1)); got != 0 {
		t.Fatalf("after a gap: %d, want 0", got)
	}
}
