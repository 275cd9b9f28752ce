package erpc

import (
	"context"
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
	// cmdContinue runs the continuation of call, an async call whose
	// outcome call.resp and call.err hold, and whose StatsHandler.CallEnd
	// ended the loop's goroutine (endCallOnLoop).
	cmdContinue
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
// recycle once it has run the commands. Once the queue is closed it
// returns nothing: what a stopping loop's goroutine left in it when it
// ended (goexitOnLoop) is for the next goroutine's stop to settle
// (close), not to run.
func (q *cmdQueue) take() []command {
	if q.n.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
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

// failQueued settles, on the stopping loop, the commands still queued. The
// batch is the loop's state meanwhile, as in runCommands: a StatsHandler
// CallEnd that ends the loop's goroutine leaves the rest of it to the
// next owner (goexitOnLoop), whose stop settles it.
func (ep *Endpoint) failQueued(cmds []command) {
	ep.loop.batch = cmds
	for i := range cmds {
		ep.loop.batchNext = i + 1
		ep.failCommand(cmds[i], true)
	}
	ep.loop.batch = nil
}

// failCommand settles a command that arrived after the loop stopped (on
// the loop's stop if onLoop, else on the poster's goroutine). A call fails
// (an async call's continuation on a goroutine of its own:
// finishStopped); a response is dropped (its request was abandoned); a
// function is dropped too, since the engine must not be touched off the
// loop (posters of functions also wait on loopDone).
func (ep *Endpoint) failCommand(c command, onLoop bool) {
	switch c.kind {
	case cmdCall:
		ep.finishStopped(c.call, nil, c.call.closedError(), onLoop)
	case cmdContinue: // on the loop only: its outcome stands
		ep.finishStopped(c.call, c.call.resp, c.call.err, onLoop)
	case cmdDial:
		c.sess.onDown(0, errClosed)
	case cmdRespond:
		c.req.end(context.Canceled)
		c.req.release(false)
	}
}
