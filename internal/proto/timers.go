package proto

// timerHeap is a binary min-heap of sessions keyed by their deadline. Each
// session stores its index, so moving or removing one is O(log n) without a
// search: with 20,000 sessions a scan per packet would not do.
type timerHeap struct {
	h []*session
}

func (t *timerHeap) len() int           { return len(t.h) }
func (t *timerHeap) top() *session      { return t.h[0] }
func (t *timerHeap) less(i, j int) bool { return t.h[i].deadline < t.h[j].deadline }

func (t *timerHeap) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.h[i].heapIdx = i
	t.h[j].heapIdx = j
}

func (t *timerHeap) push(s *session) {
	s.heapIdx = len(t.h)
	t.h = append(t.h, s)
	t.up(s.heapIdx)
}

func (t *timerHeap) pop() *session {
	s := t.h[0]
	t.removeAt(0)
	return s
}

// remove takes s out of the heap if it is in it.
func (t *timerHeap) remove(s *session) {
	if s.heapIdx >= 0 {
		t.removeAt(s.heapIdx)
	}
}

func (t *timerHeap) removeAt(i int) {
	s := t.h[i]
	last := len(t.h) - 1
	if i != last {
		t.swap(i, last)
	}
	t.h[last] = nil
	t.h = t.h[:last]
	if i != last {
		t.fixAt(i)
	}
	s.heapIdx = -1
}

// fix restores order after s's deadline changed.
func (t *timerHeap) fix(s *session) { t.fixAt(s.heapIdx) }

func (t *timerHeap) fixAt(i int) {
	if !t.down(i) {
		t.up(i)
	}
}

func (t *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(i, p) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *timerHeap) down(i int) bool {
	start := i
	n := len(t.h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && t.less(r, l) {
			j = r
		}
		if !t.less(j, i) {
			break
		}
		t.swap(i, j)
		i = j
	}
	return i > start
}
