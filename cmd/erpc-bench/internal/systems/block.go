package systems

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc"
)

// BlockFor is how long the erpc bench server's Block handler blocks: a
// database call, as a gRPC service written the Go way would make.
const BlockFor = 100 * time.Millisecond

// handleBlock registers Block the plain way (Server.Handle, neither
// Background nor any other option): what the latency scenario's
// -blocking row measures is how erpc runs such a handler by default.
func handleBlock(srv *erpc.Server) error {
	return srv.Handle("Block", func(context.Context, []byte) ([]byte, error) {
		time.Sleep(BlockFor)
		return nil, nil
	})
}

// BlockingLoad keeps calls to the server's Block handler in flight from
// an endpoint and session of its own, until Stop.
type BlockingLoad struct {
	ep     *erpc.Endpoint
	sess   *erpc.Session
	cancel context.CancelFunc
	wg     sync.WaitGroup
	calls  atomic.Int64
	errs   atomic.Int64
	first  atomic.Pointer[error]
	t0     time.Time
}

// StartBlockingLoad opens an endpoint on transport, dials target and
// keeps inflight Block calls in flight on that one session.
func StartBlockingLoad(target, transport string, inflight int) (*BlockingLoad, error) {
	ep, err := erpc.Listen(erpcClientAddr(transport), erpc.WithWindow(inflight), erpc.WithCredits(max(inflight, defaultCredits)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	sess, err := ep.Dial(dctx, target)
	dcancel()
	if err != nil {
		cancel()
		ep.Close()
		return nil, fmt.Errorf("blocking load: dial %s: %w", target, err)
	}
	l := &BlockingLoad{ep: ep, sess: sess, cancel: cancel, t0: time.Now()}
	for range inflight {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for ctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := sess.Call(cctx, "Block", nil, nil)
				ccancel()
				switch {
				case err == nil:
					l.calls.Add(1)
				case ctx.Err() == nil:
					l.errs.Add(1)
					l.first.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	return l, nil
}

// Stop ends the load, waiting for the calls in flight to be canceled, and
// returns the Block calls answered per second and the failed calls (the
// first one's error).
func (l *BlockingLoad) Stop() (perSec float64, errs int64, first error) {
	secs := time.Since(l.t0).Seconds()
	calls := l.calls.Load()
	l.cancel()
	l.wg.Wait()
	l.sess.Close()
	l.ep.Close()
	if p := l.first.Load(); p != nil {
		first = *p
	}
	if first == nil && l.errs.Load() > 0 {
		first = errors.New("blocking load: a call failed")
	}
	return float64(calls) / secs, l.errs.Load(), first
}
