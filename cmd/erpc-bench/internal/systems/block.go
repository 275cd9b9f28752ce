package systems

import (
	"context"
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
	ep       *erpc.Endpoint
	sess     *erpc.Session
	stopping atomic.Bool
	wg       sync.WaitGroup
	calls    atomic.Int64
	callNS   atomic.Int64 // the answered calls' latencies, summed
	errs     atomic.Int64
	first    atomic.Pointer[error]
	t0       time.Time
}

// StartBlockingLoad opens an endpoint on transport, dials target and
// keeps inflight Block calls in flight on that one session.
func StartBlockingLoad(target, transport string, inflight int) (*BlockingLoad, error) {
	ep, err := erpc.Listen(erpcClientAddr(transport), erpc.WithWindow(inflight), erpc.WithCredits(max(inflight, defaultCredits)))
	if err != nil {
		return nil, err
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	sess, err := ep.Dial(dctx, target)
	dcancel()
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("blocking load: dial %s: %w", target, err)
	}
	l := &BlockingLoad{ep: ep, sess: sess, t0: time.Now()}
	for range inflight {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !l.stopping.Load() {
				cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
				t0 := time.Now()
				_, err := sess.Call(cctx, "Block", nil, nil)
				ccancel()
				if err != nil {
					l.errs.Add(1)
					l.first.CompareAndSwap(nil, &err)
					continue
				}
				l.callNS.Add(int64(time.Since(t0)))
				l.calls.Add(1)
			}
		}()
	}
	return l, nil
}

// Stop ends the load: no new calls, and it waits for the ones in flight
// to be answered, so that none is left queued at the server to weigh on
// what is measured next. It returns the Block calls answered per second
// and their mean latency, until Stop, and the failed calls (the first
// one's error).
func (l *BlockingLoad) Stop() (perSec float64, mean time.Duration, errs int64, first error) {
	secs := time.Since(l.t0).Seconds()
	calls := l.calls.Load()
	if calls > 0 {
		mean = time.Duration(l.callNS.Load() / calls)
	}
	l.stopping.Store(true)
	l.wg.Wait()
	l.sess.Close()
	l.ep.Close()
	if p := l.first.Load(); p != nil {
		first = *p
	}
	return float64(calls) / secs, mean, l.errs.Load(), first
}
