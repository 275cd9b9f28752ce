package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPRestartSamePort: promise 2's second half with a listening
// client (which dials from its own listening port, so the 4-tuple of the
// new connection is the old one's): the server closes with calls in
// flight and restarts on the same port; calls in flight fail with
// Unavailable (never NotExecuted for one that ran), no handler runs twice,
// and the same Session reaches the new server again within a few seconds.
func TestReviewTCPRestartSamePort(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	var mu sync.Mutex
	runs := map[string]int{}
	newServer := func() *erpc.Server {
		srv := erpc.NewServer()
		if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) {
			mu.Lock()
			runs[string(req)]++
			mu.Unlock()
			time.Sleep(time.Duration(len(req)%3) * time.Millisecond)
			return req, nil
		}); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	sep, err := newServer().Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := sep.Target()
	addr := strings.TrimPrefix(target, "tcp://")
	for _, clientAddr := range []string{"tcp://127.0.0.1:0", "tcp://"} {
		cep, err := erpc.Listen(clientAddr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := cep.Dial(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		for restart := range 3 {
			var wg sync.WaitGroup
			var errs sync.Map
			for g := range 4 {
				wg.Go(func() {
					for k := range 20 {
						req := fmt.Sprintf("%s/%d/%d/%d", clientAddr, restart, g, k)
						_, err := s.Call(ctx, "Echo", []byte(req), nil)
						if err != nil {
							errs.Store(req, err)
						}
					}
				})
			}
			time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
			sep.Close()
			for i := 0; ; i++ {
				if sep, err = newServer().Listen("tcp://" + addr); err == nil {
					break
				}
				if i == 100 {
					t.Fatalf("restart on %s: %v", addr, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			wg.Wait()
			errs.Range(func(k, v any) bool {
				err := v.(error)
				mu.Lock()
				ran := runs[k.(string)]
				mu.Unlock()
				if errors.Is(err, erpc.ErrNotExecuted) && ran > 0 {
					t.Errorf("%s: NotExecuted, but the handler ran %d times", k, ran)
				}
				return true
			})
			// The restarted server must be reachable through the same session.
			var last error
			ok := false
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				cctx, ccancel := context.WithTimeout(ctx, time.Second)
				_, last = s.Call(cctx, "Echo", []byte(fmt.Sprintf("probe/%s/%d", clientAddr, restart)), nil)
				ccancel()
				if last == nil {
					ok = true
					break
				}
			}
			if !ok {
				t.Fatalf("client %s, restart %d: the restarted server is not reachable: %v", clientAddr, restart, last)
			}
		}
		s.Close()
		cep.Close()
		cancel()
	}
	sep.Close()
	mu.Lock()
	defer mu.Unlock()
	for k, n := range runs {
		if n > 1 && !strings.HasPrefix(k, "probe/") {
			t.Errorf("%s ran %d times", k, n)
		}
	}
}
