package proto

// ring is a FIFO that only grows, so a steady load does not allocate: the
// client's backlog of calls and its queue of slots with packets to send.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (q *ring[T]) push(v T) {
	if q.n == len(q.buf) {
		nb := make([]T, max(8, 2*len(q.buf)))
		for i := range q.n {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

// front is the oldest element; the ring must not be empty.
func (q *ring[T]) front() T { return q.buf[q.head] }

// pop removes and returns the oldest element; the ring must not be empty.
func (q *ring[T]) pop() T {
	v := q.buf[q.head]
	var zero T
	q.buf[q.head] = zero // drop references
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// at is the i-th oldest element's slot.
func (q *ring[T]) at(i int) *T { return &q.buf[(q.head+i)%len(q.buf)] }
