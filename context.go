package erpc

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// reqCtx is a handler's context. Each request that asks for one gets its
// own (one allocation), canceled when the request ends and never reused,
// so a handler may keep it, or a goroutine wait on it, for as long as it
// likes. The Done channel and the deadline's timer are made only when
// someone asks for Done.
type reqCtx struct {
	req   Request // for SetHeader and SetTrailer (respmeta.go)
	dl    time.Time
	hasD  bool
	md    Metadata
	peer  netip.AddrPort
	auth  *PeerAuth       // PeerAuthFromContext
	stats context.Context // the StatsHandler's, whose values this one has too

	mu    sync.Mutex
	done  chan struct{}
	err   error
	timer *time.Timer
}

func newReqCtx(r *request) *reqCtx {
	c := &reqCtx{}
	c.init(r)
	return c
}

func (c *reqCtx) init(r *request) {
	c.dl, c.hasD, c.md, c.peer, c.auth, c.stats = r.dl, r.hasDL, r.md, r.peer, r.auth, r.stats
	c.req = Request{r: r, gen: r.gen()}
}

// ctxSlab hands out contexts carved from arrays of 64, for the handlers
// that always ask for one (Handle, Register): one allocation per 64
// requests instead of one each. A context is never reused; an array lives
// while any of its contexts is reachable (9 KiB at most per such array).
// The loop's only.
type ctxSlab struct{ free []reqCtx }

const ctxSlabSize = 64

func (s *ctxSlab) next() *reqCtx {
	if len(s.free) == 0 {
		s.free = make([]reqCtx, ctxSlabSize)
	}
	c := &s.free[0]
	s.free = s.free[1:]
	return c
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// closedContext is what Context gives for a spent handle.
var closedContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// cancel ends the context with err (context.Canceled or
// context.DeadlineExceeded), once.
func (c *reqCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelLocked(err)
}

func (c *reqCtx) cancelLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

func (c *reqCtx) Deadline() (time.Time, bool) { return c.dl, c.hasD }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
		if c.hasD {
			c.timer = time.AfterFunc(time.Until(c.dl), func() { c.cancel(context.DeadlineExceeded) })
		}
	}
	return c.done
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	return c.err
}

// expireLocked ends the context if its deadline has passed, for callers of
// Err that never asked for Done (and so armed no timer).
func (c *reqCtx) expireLocked() {
	if c.err == nil && c.hasD && !time.Now().Before(c.dl) {
		c.cancelLocked(context.DeadlineExceeded)
	}
}

func (c *reqCtx) Value(key any) any {
	switch key.(type) {
	case incomingKey:
		return c.md
	case peerKey:
		return c.peer
	case peerAuthKey:
		return c.auth
	case requestKey:
		return c
	}
	if c.stats != nil {
		return c.stats.Value(key)
	}
	return nil
}

func (c *reqCtx) String() string { return "erpc.Request.Context" }
