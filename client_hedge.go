package erpc

import (
	"context"
	"time"
)

// hedgeResult is one copy's outcome.
type hedgeResult struct {
	a   attempt
	out []byte
	err error
}

// callHedged makes an Idempotent call with hedging: when the copy in
// flight has not answered within the policy's Hedge, another goes to
// another replica; the first success wins and the others are canceled.
// Each hedge draws on the retry budget, as a retry does: with none left,
// no hedge is sent. Failures go again as Call's do. m, for a typed call, gives the method's
// wire ID (its request is encoded already); nil for a raw call.
func (c *Client) callHedged(ctx context.Context, p *placement, req, resp []byte, m *typedMethod) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan hedgeResult, p.pol.MaxAttempts)
	cancels := make([]context.CancelFunc, 0, p.pol.MaxAttempts)
	out := 0 // copies in flight
	launch := func() error {
		a, err := p.next(ctx)
		if err != nil {
			return err
		}
		cctx, ccancel := context.WithCancel(ctx)
		cancels = append(cancels, ccancel)
		buf := resp
		if out > 0 || len(cancels) > 1 {
			buf = nil // resp is the first copy's
		}
		out++
		go func() {
			var data []byte
			var err error
			if m != nil {
				data, err = a.fs.s.callStats(cctx, m.name, m.id, req, buf)
			} else {
				data, err = a.fs.s.Call(cctx, p.method, req, buf)
			}
			results <- hedgeResult{a, data, err}
		}()
		return nil
	}
	// finish cancels the copies still in flight and waits for them, so
	// that nothing reads req once the call has returned.
	finish := func(data []byte, err error) ([]byte, error) {
		for _, f := range cancels {
			f()
		}
		for ; out > 0; out-- {
			r := <-results
			p.record(r.a, r.err)
		}
		return data, err
	}
	if err := launch(); err != nil {
		return nil, err
	}
	var lastErr error
	hedge := time.NewTimer(p.pol.Hedge)
	defer hedge.Stop()
	for {
		select {
		case <-hedge.C:
			// A hedge is extra load like a retry: it draws on the retry
			// budget, and without budget the call waits for its copy.
			if p.attempts < p.pol.MaxAttempts && p.c.budget.Withdraw(time.Now()) {
				if err := launch(); err == nil {
					hedge.Reset(p.pol.Hedge)
				}
			}
			continue
		case r := <-results:
			out--
			p.record(r.a, r.err)
			if r.err == nil {
				return finish(r.out, nil)
			}
			lastErr = r.err
		}
		if out > 0 {
			continue // another copy may still answer
		}
		if !p.retry(ctx, lastErr) {
			return finish(nil, lastErr)
		}
		if err := launch(); err != nil {
			return finish(nil, err)
		}
		hedge.Reset(p.pol.Hedge)
	}
}
