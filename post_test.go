package erpc_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestPostRunsOnLoop: functions posted from many goroutines and an
// OnLoop handler share a counter without a lock; the race detector
// fails the test if Post ran anywhere but on the loop. Posts from one
// goroutine run in order, and Post after Close refuses.
func TestPostRunsOnLoop(t *testing.T) {
	n := newMemNet()
	shared := 0 // touched only on ep's loop
	ep := n.Listen(t, serverWith(t, "inc", func(context.Context, []byte) ([]byte, error) {
		shared++
		return nil, nil
	}, erpc.OnLoop())) // never handed off: it shares state with the posts
	s, err := ep.Dial(context.Background(), n.Target(ep))
	if err != nil {
		t.Fatal(err)
	}
	const posters, perPoster = 4, 200
	var wg sync.WaitGroup
	orderOK := make([]bool, posters)
	for p := range posters {
		wg.Go(func() {
			last := -1
			inOrder := true
			done := make(chan struct{})
			for i := range perPoster {
				if err := ep.Post(func() {
					shared++
					inOrder = inOrder && i == last+1
					last = i
					if i == perPoster-1 {
						close(done)
					}
				}); err != nil {
					t.Error(err)
					return
				}
			}
			<-done
			orderOK[p] = inOrder
		})
	}
	for range 100 {
		if _, err := s.Call(context.Background(), "inc", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	got := make(chan int, 1)
	if err := ep.Post(func() { got <- shared }); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != posters*perPoster+100 {
		t.Fatalf("shared = %d, want %d", v, posters*perPoster+100)
	}
	for p, ok := range orderOK {
		if !ok {
			t.Errorf("poster %d: functions ran out of order", p)
		}
	}
	ep.Close()
	err = ep.Post(func() { t.Error("ran after Close") })
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.Unavailable {
		t.Fatalf("Post after Close: %v, want an Unavailable error", err)
	}
	if ep.Post(nil) == nil {
		t.Fatal("Post(nil) accepted")
	}
}
