package erpc

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpinnersBounded: five endpoints of one process under steady calls
// never have more loops spinning at once than spinLimit, some loop had
// to give its spin up for another's (the bound was reached), and once
// they close no place is left taken.
func TestSpinnersBounded(t *testing.T) {
	if runtime.GOMAXPROCS(0) > 8 {
		t.Skip("the bound is reached only with more endpoints than processors")
	}
	limit := spinLimit()
	srvs := make([]*Endpoint, 4)
	for i := range srvs {
		srv := NewServer()
		srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil })
		ep, err := srv.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srvs[i] = ep
	}
	cli, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var most atomic.Int32
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := spinners.Load(); n > most.Load() {
				most.Store(n)
			}
			runtime.Gosched()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, ep := range srvs {
		wg.Go(func() {
			s, err := cli.Dial(ctx, ep.Target())
			if err != nil {
				t.Error(err)
				return
			}
			for range 300 {
				if _, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(200 * time.Microsecond) // gaps the loops spin through
			}
		})
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	refused := 0
	for _, ep := range append(srvs, cli) {
		done := make(chan int)
		if err := ep.Post(func() { done <- ep.loop.share.refused }); err != nil {
			t.Fatal(err)
		}
		refused += <-done
	}
	for _, ep := range append(srvs, cli) {
		ep.Close()
	}
	t.Logf("limit %d, most spinning at once %d, spins refused %d", limit, most.Load(), refused)
	if most.Load() > limit {
		t.Fatalf("%d loops spun at once; the limit is %d", most.Load(), limit)
	}
	if refused == 0 {
		t.Fatal("no loop was ever refused a spin: the test never reached the bound")
	}
	if n := spinners.Load(); n != 0 {
		t.Fatalf("%d places still taken after every endpoint closed", n)
	}
}
