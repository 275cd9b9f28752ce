package raft

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/hashicorp/raft"
)

// A pipeline sends AppendEntries without waiting for the previous answer.
// erpc completes calls in whatever order the answers come; raft needs its
// futures back in send order. Sent futures wait in a FIFO; whoever settles
// a future (the call's continuation on the endpoint's loop, or its timeout)
// moves the settled head of the FIFO to Consumer(). There is no goroutine
// of the pipeline's own between an answer and raft: one hand-off fewer
// than a reordering goroutine, which matters for one-at-a-time latency.
//
// Backpressure: at most MaxInFlight futures are sent and not yet handed to
// Consumer(); AppendEntries blocks beyond that, as raft expects.
type pipeline struct {
	t        *Transport
	target   raft.ServerAddress
	sess     *erpc.Session
	slots    chan struct{} // a token per future sent and not yet handed over
	done     chan raft.AppendFuture
	shutdown chan struct{}
	once     sync.Once

	mu     sync.Mutex
	queue  []*appendFuture // sent, in order, not yet handed over
	broken error           // set when Consumer() stopped being drained
}

// consumerBuffer is the capacity of Consumer(). raft's pipeline decoder
// drains it continuously; a full buffer means raft has stopped reading.
const consumerBuffer = 1024

// errPipelineTimeout fails a pipelined call that got no answer in Timeout.
var errPipelineTimeout = errors.New("erpc/raft: pipelined AppendEntries timed out")

var errPipelineStalled = errors.New("erpc/raft: pipeline consumer not drained")

// AppendEntriesPipeline opens a pipeline to target, unless MaxInFlight
// disables pipelining.
func (t *Transport) AppendEntriesPipeline(_ raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if t.cfg.MaxInFlight <= 1 {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	if t.closed() {
		return nil, ErrTransportShutdown
	}
	p, err := t.peer(target)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.Timeout)
	defer cancel()
	s, err := p.session(ctx, kindBulk)
	if err != nil {
		return nil, err
	}
	return &pipeline{
		t:        t,
		target:   target,
		sess:     s,
		slots:    make(chan struct{}, t.cfg.MaxInFlight),
		done:     make(chan raft.AppendFuture, consumerBuffer),
		shutdown: make(chan struct{}),
	}, nil
}

// AppendEntries sends args; it blocks while MaxInFlight calls are out.
func (pl *pipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if d := pl.t.cfg.Drop; d != nil && d(pl.target) {
		return nil, ErrDropped
	}
	select {
	case pl.slots <- struct{}{}:
	case <-pl.shutdown:
		return nil, raft.ErrPipelineShutdown
	case <-pl.t.shutdown:
		return nil, ErrTransportShutdown
	}
	f := &appendFuture{start: time.Now(), args: args, resp: resp, done: make(chan struct{}), shutdown: pl.shutdown}
	pl.mu.Lock()
	if err := pl.broken; err != nil {
		pl.mu.Unlock()
		<-pl.slots
		return nil, err
	}
	pl.queue = append(pl.queue, f)
	f.timer = time.AfterFunc(pl.t.cfg.Timeout, func() { pl.settle(f, nil, errPipelineTimeout) })
	pl.mu.Unlock()
	pl.sess.Go(methodAppendEntries, appendAppendEntriesRequest(nil, args), nil, func(b []byte, err error) {
		// On the endpoint's loop: decode aside (the future may have timed
		// out, and raft may be reading f.resp already), then settle.
		var r raft.AppendEntriesResponse
		if err == nil {
			err = decodeAppendEntriesResponse(b, &r)
		}
		pl.settle(f, &r, err)
	})
	return f, nil
}

// settle completes f once, then hands every settled future at the head of
// the queue to Consumer(), in send order. It never blocks.
func (pl *pipeline) settle(f *appendFuture, resp *raft.AppendEntriesResponse, err error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if f.settled {
		return
	}
	f.settled = true
	if f.timer != nil {
		f.timer.Stop()
	}
	if err == nil {
		*f.resp = *resp
	}
	f.err = err
	close(f.done)
	for len(pl.queue) > 0 && pl.queue[0].settled {
		h := pl.queue[0]
		pl.queue[0] = nil
		pl.queue = pl.queue[1:]
		<-pl.slots
		select {
		case pl.done <- h:
		default:
			pl.broken = errPipelineStalled
		}
	}
}

// Consumer yields the futures of sent entries in send order.
func (pl *pipeline) Consumer() <-chan raft.AppendFuture { return pl.done }

// Close stops the pipeline; futures not yet settled fail with
// raft.ErrPipelineShutdown. Calls already sent complete on their own.
func (pl *pipeline) Close() error {
	pl.once.Do(func() { close(pl.shutdown) })
	return nil
}

// appendFuture is one pipelined AppendEntries.
type appendFuture struct {
	start    time.Time
	args     *raft.AppendEntriesRequest
	resp     *raft.AppendEntriesResponse
	done     chan struct{}
	shutdown chan struct{}
	timer    *time.Timer // under the pipeline's mu
	settled  bool        // under the pipeline's mu
	err      error
}

func (f *appendFuture) Error() error {
	select {
	case <-f.done:
		return f.err
	case <-f.shutdown:
		select { // a completed call wins over a close
		case <-f.done:
			return f.err
		default:
			return raft.ErrPipelineShutdown
		}
	}
}

func (f *appendFuture) Start() time.Time                      { return f.start }
func (f *appendFuture) Request() *raft.AppendEntriesRequest   { return f.args }
func (f *appendFuture) Response() *raft.AppendEntriesResponse { return f.resp }
