package erpc

import (
	"context"
	"sync"
	"time"
)

// goCall is one Client.Go call on its way over the fleet; pooled.
type goCall struct {
	p         placement
	a         attempt
	req, resp []byte
	done      func(resp []byte, err error)
	cont      func(resp []byte, err error) // g.onDone, made once per goCall
}

var goCallPool sync.Pool

func init() { // not in goCallPool's initializer: onDone refers to the pool
	goCallPool.New = func() any {
		g := &goCall{}
		g.cont = g.onDone
		return g
	}
}

// Go sends req to method on one of the replicas and returns at once; done
// runs on the endpoint's event loop with the outcome, as with Session.Go
// (it must not block). A call that never ran on its replica goes to
// another, as with Call; an Idempotent method's other failures go again
// after a pause, within the retry budget. Hedging is Call's only.
func (c *Client) Go(method string, req, resp []byte, done func(resp []byte, err error)) {
	g := goCallPool.Get().(*goCall)
	g.p.init(c, context.Background(), method)
	g.req, g.resp, g.done = req, resp, done
	g.launch()
}

// launch places the next attempt. With no replica ready it waits for one
// on a goroutine of its own (the loop must not wait).
func (g *goCall) launch() {
	if len(g.p.c.ready.Load().list) == 0 {
		go g.launchWaiting()
		return
	}
	g.launchWaiting()
}

func (g *goCall) launchWaiting() {
	a, err := g.p.next(context.Background())
	if err != nil {
		g.finish(err)
		return
	}
	g.a = a
	a.fs.s.Go(g.p.method, g.req, g.resp, g.cont)
}

// onDone runs on the loop when an attempt ends.
func (g *goCall) onDone(resp []byte, err error) {
	g.p.record(g.a, err)
	switch {
	case err == nil:
	case g.p.attempts >= g.p.pol.MaxAttempts || g.p.c.closed.Load():
	case NotExecuted(err):
		g.launch()
		return
	case g.p.pol.Idempotent && retryable(err) && g.p.c.budget.Withdraw(time.Now()):
		g.p.retries++
		time.AfterFunc(retryDelay(g.p.retries), g.launch)
		return
	}
	done := g.done
	g.put()
	done(resp, err)
}

// finish fails the call on the endpoint's loop, where done runs.
func (g *goCall) finish(err error) {
	done, ep := g.done, g.p.c.ep
	g.put()
	if ep.Post(func() { done(nil, err) }) != nil {
		done(nil, err) // the endpoint has closed: no loop to run it on
	}
}

func (g *goCall) put() {
	cont := g.cont
	*g = goCall{cont: cont}
	goCallPool.Put(g)
}
