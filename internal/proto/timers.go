package proto

// timerHeap is a binary min-heap of sessions keyed by their deadline. It
// keeps each session's index, so moving or removing one is O(log n)
// without a search: with 20,000 sessions a scan per packet would not do.
//
// A sift touches no session: an entry carries its deadline and session
// number beside the session, and the indexes are kept in an array by
// session number, not in the sessions. With thousands of sessions, one
// session struct read or written per level was a cache miss per level,
// a dozen per heap operation; the heap's two arrays stay warm.
type timerHeap struct {
	h   []timerEntry
	idx []int32 // by session number: its index in h, or -1
}

type timerEntry struct {
	at  Time // the session's deadline when it was pushed or fixed
	s   *session
	num uint32 // s.num
}

// in reports whether s has an entry.
func (t *timerHeap) in(s *session) bool { return t.index(s) >= 0 }

// index is s's index in h, or -1.
func (t *timerHeap) index(s *session) int {
	if int(s.num) >= len(t.idx) {
		return -1
	}
	return int(t.idx[s.num])
}

func (t *timerHeap) len() int { return len(t.h) }

// topDeadline is the earliest deadline; the heap must not be empty.
func (t *timerHeap) topDeadline() Time { return t.h[0].at }

// place puts entry x at index i and tells its session.
func (t *timerHeap) place(i int, x timerEntry) {
	t.h[i] = x
	t.idx[x.num] = int32(i)
}

// push adds s, which has no entry, at s.deadline.
func (t *timerHeap) push(s *session) {
	for int(s.num) >= len(t.idx) {
		t.idx = append(t.idx, -1)
	}
	t.h = append(t.h, timerEntry{})
	t.up(len(t.h)-1, timerEntry{at: s.deadline, s: s, num: s.num})
}

func (t *timerHeap) pop() *session {
	s := t.h[0].s
	t.removeAt(0)
	return s
}

// remove takes s out of the heap if it is in it.
func (t *timerHeap) remove(s *session) {
	if i := t.index(s); i >= 0 {
		t.removeAt(i)
	}
}

func (t *timerHeap) removeAt(i int) {
	num := t.h[i].num
	last := len(t.h) - 1
	x := t.h[last]
	t.h[last] = timerEntry{}
	t.h = t.h[:last]
	if i != last {
		t.fixAt(i, x)
	}
	t.idx[num] = -1
}

// fix restores order after s's deadline changed; s has an entry.
func (t *timerHeap) fix(s *session) {
	t.fixAt(t.index(s), timerEntry{at: s.deadline, s: s, num: s.num})
}

// fixAt puts x at index i, or wherever below or above it order wants.
func (t *timerHeap) fixAt(i int, x timerEntry) {
	if !t.down(i, x) {
		t.up(i, x)
	}
}

// up moves the hole at i toward the root while x belongs above it, then
// puts x there.
func (t *timerHeap) up(i int, x timerEntry) {
	for i > 0 {
		p := (i - 1) / 2
		if x.at >= t.h[p].at {
			break
		}
		t.place(i, t.h[p])
		i = p
	}
	t.place(i, x)
}

// down moves the hole at i toward the leaves while a child belongs above
// x, puts x there, and reports whether it moved.
func (t *timerHeap) down(i int, x timerEntry) bool {
	start := i
	n := len(t.h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && t.h[r].at < t.h[l].at {
			j = r
		}
		if t.h[j].at >= x.at {
			break
		}
		t.place(i, t.h[j])
		i = j
	}
	if i > start {
		t.place(i, x)
		return true
	}
	return false
}
