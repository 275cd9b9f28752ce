package erpc

import (
	"context"
	"sync"
	"time"
)

// reqCtx is a handler's context. It lives inside its pooled Request and
// makes its Done channel only when a handler asks for it, so an inline
// handler that never looks costs no allocation.
type reqCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *reqCtx) reset() {
	c.mu.Lock()
	c.done, c.err = nil, nil
	c.mu.Unlock()
}

func (c *reqCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}

func (c *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return context.Canceled
	}
	return nil
}

func (c *reqCtx) Value(any) any { return nil }

func (c *reqCtx) String() string { return "erpc.Request.Context" }
