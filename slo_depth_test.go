package erpc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestSLOAdmitsWithFreeWorkerBelowQueueDepth: WithSLO promises that a
// background request that finds a worker of its queue free ("fewer
// requests admitted and unanswered than workers") is always admitted. With
// four workers and WithQueueDepth(1), after four requests were answered
// (their handlers answer at once and then tidy up), no request is admitted
// and unanswered: each of the next two finds a worker free by that
// definition. The second is refused: the channel that carries requests to
// the workers holds one, and WithQueueDepth(1) sizes it below the number
// of workers.
func TestSLOAdmitsWithFreeWorkerBelowQueueDepth(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	tidy := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(tidy) }) }
	defer free()
	srv := erpc.NewServer()
	if err := srv.HandleRaw("Work", func(r erpc.Request) {
		r.Respond(nil)
		<-tidy // work after the answer: logging, cleanup
	}, erpc.Background()); err != nil {
		t.Fatal(err)
	}
	ep := n.Listen(t, srv, erpc.WithWorkers(4), erpc.WithQueueDepth(1), erpc.WithSLO(time.Second, time.Millisecond))
	s := dialT(t, n, n.Listen(t, nil), ep)
	for i := range 4 {
		if _, err := call(t, s, "Work", []byte("x")); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// Every request so far is answered: 0 admitted and unanswered, 4 workers.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := s.Call(ctx, "Work", []byte("y"), nil)
			errs <- err
		})
	}
	time.Sleep(200 * time.Millisecond)
	free()
	wg.Wait()
	close(errs)
	for err := range errs {
		if erpc.CodeOf(err) == erpc.ResourceExhausted {
			t.Fatalf("a request that found 0 of 4 workers' requests unanswered was refused: %v (NacksSent %d)", err, ep.Stats().NacksSent)
		}
	}
}
