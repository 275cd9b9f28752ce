package proto

import "testing"

// The send queue answers "which slot gained unsent packets first" as the
// walk over every slot did: stale stamps and slots with nothing left to
// send are skipped, and a slot stamped again goes to the back.
func TestSendQueueOldest(t *testing.T) {
	cs := &clientSide{slots: make([]clientSlot, 4)}
	active := func(i int) {
		sl := &cs.slots[i]
		sl.state, sl.respSize, sl.reqPkts, sl.reqNext = cslotActive, -1, 1, 0
		cs.stamp(i)
	}
	for _, i := range []int{2, 0, 3} {
		active(i)
	}
	if got := cs.sendq.oldest(cs.slots); got != 2 {
		t.Fatalf("oldest = %d, want 2", got)
	}
	cs.slots[2].reqNext = 1 // sent everything
	if got := cs.sendq.oldest(cs.slots); got != 0 {
		t.Fatalf("after slot 2 sent: oldest = %d, want 0", got)
	}
	cs.stamp(0) // gained packets again (a response's first packet): to the back
	if got := cs.sendq.oldest(cs.slots); got != 3 {
		t.Fatalf("after slot 0 restamped: oldest = %d, want 3", got)
	}
	cs.slots[3].state = cslotFree
	if got := cs.sendq.oldest(cs.slots); got != 0 {
		t.Fatalf("after slot 3 freed: oldest = %d, want 0", got)
	}
	cs.slots[0].reqNext = 1
	if got := cs.sendq.oldest(cs.slots); got != -1 || cs.sendq.n != 0 {
		t.Fatalf("nothing to send: oldest = %d with %d entries left", got, cs.sendq.n)
	}
	// Growth keeps order across the ring's wrap.
	for round := range 3 {
		for i := range 4 {
			active(i)
		}
		for want := range 4 {
			if got := cs.sendq.oldest(cs.slots); got != want {
				t.Fatalf("round %d: oldest = %d, want %d", round, got, want)
			}
			cs.slots[want].reqNext = 1
		}
	}
}

// find is a binary search over records in sequence order, across the
// wrap of the 32-bit sequence numbers.
func TestInflightFindAcrossWrap(t *testing.T) {
	var l inflightList
	start := ^uint32(0) - 5
	for k := range uint32(12) {
		l.add(inflight{seq: start + 2*k})
	}
	for k := range uint32(12) {
		if got := l.find(start + 2*k); got != int(k) {
			t.Fatalf("find(%d) = %d, want %d", start+2*k, got, k)
		}
		if got := l.find(start + 2*k + 1); got != -1 {
			t.Fatalf("find(%d), never sent, = %d", start+2*k+1, got)
		}
	}
}
