package erpc

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestHandOffRacesReturn races the takeover's compare-and-swap against
// the handler's return as hard as it can: a goroutine tries to hand the
// loop off from whatever inline run it sees, back to back, while clients
// call fast handlers (answering inline, from a goroutine, or not before
// they return). Both outcomes must happen many times (the race is
// counted: handoffs won and lost), every call must get its own answer,
// the server must hold no request at the end, and the race detector must
// see no access to loop state from two goroutines.
func TestHandOffRacesReturn(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		// The loop runs these handlers without blocking: with one P the
		// watchdog (or the racer) runs only between them.
		t.Skip("needs two Ps: the race is between two running goroutines")
	}
	n := memnet.NewNetwork(1, memnet.LinkConfig{})
	listen := func(srv *Server, opts ...Option) *Endpoint {
		tr, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithTransport(tr))
		var ep *Endpoint
		if srv != nil {
			ep, err = srv.Listen("", opts...)
		} else {
			ep, err = Listen("", opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		return ep
	}
	var seen sync.Map // every request object a handler was given
	srv := NewServer()
	srv.HandleRaw("Echo", func(r Request) {
		seen.Store(r.r, true)
		d := r.Data()
		switch d[0] % 3 {
		case 0:
			r.Respond(d)
		case 1:
			go r.Respond(r.Data())
		case 2:
			for range int(d[1]) { // a little work, then the answer
				_ = r.Method()
			}
			r.Respond(d)
		}
	})
	ep := listen(srv, WithHandoff(-1)) // only the racer hands off
	stop := make(chan struct{})
	var racer sync.WaitGroup
	racer.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r := ep.watch.inline.Load(); r != nil {
				if s := r.state.Load(); s&phInline != 0 {
					ep.handOff(r, s>>genShift)
					continue
				}
			}
			runtime.Gosched()
		}
	})
	// Calls go on until each outcome has happened enough times (or 10 s
	// pass): at least 2000 calls, more on a fast machine where a run is
	// rarely caught in the middle.
	const clients, minCalls, enough = 4, 2000, 50
	raced := func() bool { return ep.watch.handoffs.Load() >= enough && ep.watch.handoffsLost.Load() >= enough }
	deadline := time.Now().Add(10 * time.Second)
	var calls atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	for c := range clients {
		cli := listen(nil)
		s, err := cli.Dial(context.Background(), ep.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := 0; calls.Add(1) <= minCalls || !raced() && time.Now().Before(deadline); i++ {
				req := []byte{byte(i), byte(c * i), byte(c)}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := s.Call(ctx, "Echo", req, nil)
				cancel()
				if err != nil || !bytes.Equal(resp, req) {
					failed.Add(1)
					t.Errorf("call %d: %x, %v; want %x", i, resp, err, req)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	racer.Wait()
	won, lost := ep.watch.handoffs.Load(), ep.watch.handoffsLost.Load()
	t.Logf("%d calls: %d handoffs won, %d lost to the handler's return", calls.Load()-clients, won, lost)
	if won == 0 || lost == 0 {
		t.Fatalf("the race needs both outcomes: %d won, %d lost", won, lost)
	}
	if st := ep.Stats(); st.HeldRequests != 0 {
		t.Fatalf("the server holds %d requests after every call was answered", st.HeldRequests)
	}
	// Every reference is dropped: the run's (by the loop, or by the
	// handed-off goroutine, which may do it just after its answer went)
	// and the answer's (by the loop once sent).
	objects, held := 0, 0
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		objects, held = 0, 0
		seen.Range(func(k, _ any) bool {
			objects++
			if s := k.(*request).state.Load(); s&refMask != 0 || s&(1<<phaseBits-1) != 0 {
				held++
			}
			return true
		})
		if held == 0 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%d request objects, %d with a reference left", objects, held)
	if held > 0 {
		t.Fatalf("%d of %d request objects still hold a reference or a phase bit", held, objects)
	}
}
