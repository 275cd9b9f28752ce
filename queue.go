package erpc

import (
	"sync"
	"sync/atomic"
)

type cmdKind uint8

const (
	cmdCall      cmdKind = iota + 1 // start call
	cmdCancel                       // cancel call
	cmdRespond                      // answer req (from a handler, worker or continuation)
	cmdDial                         // open sess
	cmdCloseSess                    // close sess
	cmdFunc                         // run fn on the loop
	cmdStop                         // close the endpoint
)

// command is work handed to the event loop. It is a value, so posting one
// allocates nothing once the queue's slices have grown.
type command struct {
	kind cmdKind
	call *call
	req  *request
	sess *Session
	fn   func()
}

// cmdQueue is a multi-producer queue with a single consumer, the loop. A
// mutex guards it: producers hold it for an append, the loop for a slice
// swap, so it is never held across real work.
type cmdQueue struct {
	mu     sync.Mutex
	buf    []command
	spare  []command
	closed bool
	n      atomic.Int32 // commands queued; read by the loop without the lock
}

// push queues c and returns how many commands wait now, or reports false
// if the loop has stopped.
func (q *cmdQueue) push(c command) (waiting int32, ok bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, false
	}
	q.buf = append(q.buf, c)
	q.mu.Unlock()
	return q.n.Add(1), true
}

// close refuses further commands and returns those still queued.
func (q *cmdQueue) close() []command {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	b := q.buf
	q.buf = nil
	return b
}

// take returns everything queued; the caller gives the slice back with
// recycle once it has run the commands.
func (q *cmdQueue) take() []command {
	if q.n.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	b := q.buf
	q.buf = q.spare[:0]
	q.spare = nil
	q.mu.Unlock()
	q.n.Add(-int32(len(b)))
	return b
}

func (q *cmdQueue) recycle(b []command) {
	clear(b)
	q.mu.Lock()
	if q.spare == nil {
		q.spare = b[:0]
	}
	q.mu.Unlock()
}

// requeue puts b, the rest of a batch the loop took but did not run, back
// at the head of the queue (goexitOnLoop). It copies b; it allocates, on
// that rare path only.
func (q *cmdQueue) requeue(b []command) {
	if len(b) == 0 {
		return
	}
	q.mu.Lock()
	buf := make([]command, 0, len(b)+len(q.buf))
	buf = append(append(buf, b...), q.buf...)
	clear(q.buf)
	q.buf = buf
	q.mu.Unlock()
	q.n.Add(int32(len(b)))
}
