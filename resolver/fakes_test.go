package resolver

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// failsafe bounds every wait on the resolver goroutine; tests never sleep
// and never reach it unless the code under test is wrong.
const failsafe = 10 * time.Second

// fakeClock moves only when told; NewTimer reports each wait the resolver
// starts on armed, so a test knows the resolver is idle and for how long.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_000_000, 0), armed: make(chan time.Duration, 1000)}
}

type fakeTimer struct {
	clk  *fakeClock
	when time.Time
	c    chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clk: c, when: c.now.Add(d), c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	c.armed <- d
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	for i, o := range t.clk.timers {
		if o == t {
			t.clk.timers = append(t.clk.timers[:i], t.clk.timers[i+1:]...)
			return
		}
	}
}

// Advance moves the clock and fires the timers now due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.when.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}

// expectArmed waits for the resolver's next wait and returns its length.
func (c *fakeClock) expectArmed(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.armed:
		return d
	case <-time.After(failsafe):
		t.Fatal("the resolver never started waiting")
		return 0
	}
}

// scriptedLookup hands each look-up to the test, which answers it.
type scriptedLookup struct {
	clk   *fakeClock
	calls chan *lookupCall
}

type lookupCall struct {
	name  string
	srv   bool
	at    time.Time // fake time of the call
	reply chan lookupReply
}

type lookupReply struct {
	ips  []string
	srvs []*net.SRV
	err  error
}

func newScriptedLookup(clk *fakeClock) *scriptedLookup {
	return &scriptedLookup{clk: clk, calls: make(chan *lookupCall, 100)}
}

func (l *scriptedLookup) call(ctx context.Context, name string, srv bool) (lookupReply, error) {
	c := &lookupCall{name: name, srv: srv, at: l.clk.Now(), reply: make(chan lookupReply, 1)}
	l.calls <- c
	select {
	case r := <-c.reply:
		return r, r.err
	case <-ctx.Done():
		return lookupReply{}, ctx.Err()
	}
}

func (l *scriptedLookup) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r, err := l.call(ctx, host, false)
	var out []net.IPAddr
	for _, s := range r.ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, err
}

func (l *scriptedLookup) LookupSRV(ctx context.Context, _, _, name string) (string, []*net.SRV, error) {
	r, err := l.call(ctx, name, true)
	return "", r.srvs, err
}

// next waits for the resolver's next look-up.
func (l *scriptedLookup) next(t *testing.T) *lookupCall {
	t.Helper()
	select {
	case c := <-l.calls:
		return c
	case <-time.After(failsafe):
		t.Fatal("the resolver never looked up")
		return nil
	}
}

func (c *lookupCall) answer(ips ...string)    { c.reply <- lookupReply{ips: ips} }
func (c *lookupCall) fail(err error)          { c.reply <- lookupReply{err: err} }
func (c *lookupCall) answerSRV(s ...*net.SRV) { c.reply <- lookupReply{srvs: s} }

// chanWatcher queues what it hears.
type chanWatcher struct {
	updates chan State
	errs    chan error
}

func newChanWatcher() *chanWatcher {
	return &chanWatcher{updates: make(chan State, 1000), errs: make(chan error, 1000)}
}

func (w *chanWatcher) Update(s State)  { w.updates <- s }
func (w *chanWatcher) Error(err error) { w.errs <- err }

func (w *chanWatcher) expectUpdate(t *testing.T) State {
	t.Helper()
	select {
	case s := <-w.updates:
		return s
	case <-time.After(failsafe):
		t.Fatal("no update")
		return State{}
	}
}

// addrs lists a state's addresses.
func addrs(s State) []string {
	var out []string
	for _, a := range s.Addresses {
		out = append(out, a.Addr)
	}
	return out
}
