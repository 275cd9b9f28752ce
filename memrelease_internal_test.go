package erpc

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestMemoryFollowsLoadEndpoint: after a load of large requests ends, the
// server endpoint's pool gives its buffers back (PooledBytes reaches 0)
// and, having given back more than freeOSAfter, asks the runtime once to
// return the memory to the operating system. The pool's idle period is
// shortened to keep the test quick.
func TestMemoryFollowsLoadEndpoint(t *testing.T) {
	srv := NewServer()
	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { return req[:1], nil })
	quick := Option(func(o *options) { o.engine.PoolIdle = 200 * time.Millisecond })
	ep, err := srv.Listen("127.0.0.1:0", quick)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const callers, size = 24, 1 << 20 // 24 MiB of request buffers at once
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			s, err := Dial(ctx, ep.Target())
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			req := make([]byte, size)
			for range 3 {
				if _, err := s.Call(ctx, "Echo", req, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	peak := ep.Stats().PooledBytes
	var pooled, runs int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		done := make(chan struct{})
		if err := ep.Post(func() { runs = ep.loop.mem.runs; close(done) }); err != nil {
			t.Fatal(err)
		}
		<-done
		pooled = ep.Stats().PooledBytes
		if pooled == 0 && runs > 0 {
			break
		}
	}
	st := ep.Stats()
	t.Logf("pooled %d KiB after the load, %d KiB now; %d KiB given back; %d request(s) to the OS", peak>>10, pooled>>10, st.PoolReleasedBytes>>10, runs)
	if st.PoolReleasedBytes < freeOSAfter {
		t.Fatalf("the pool gave back %d KiB in all, under the %d KiB that ask the OS: the test's load is too small", st.PoolReleasedBytes>>10, freeOSAfter>>10)
	}
	if pooled != 0 || runs != 1 {
		t.Fatalf("after the load: pooled %d bytes, %d requests to the OS; want 0 and 1", pooled, runs)
	}
}
