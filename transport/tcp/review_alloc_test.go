package tcp_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestReviewCallAllocsVariants: promise 8 beyond TestCallAllocs's shape
// (client-only client, 32 B and 64 KiB): a listening client (which dials
// from its listening port) and messages of several packets (256 KiB,
// 1 MiB), where the outbox and the partial-frame paths work.
func TestReviewCallAllocsVariants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("measured on Linux's direct-write path")
	}
	srv := erpc.NewServer()
	if err := srv.HandleRaw("Echo", func(r erpc.Request) {
		out := r.ResponseBuffer(len(r.Data()))
		copy(out, r.Data())
		r.Respond(out)
	}); err != nil {
		t.Fatal(err)
	}
	sep, err := srv.Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	for _, client := range []string{"tcp://127.0.0.1:0", "tcp://"} {
		cep, err := erpc.Listen(client)
		if err != nil {
			t.Fatal(err)
		}
		defer cep.Close()
		s, err := cep.Dial(context.Background(), sep.Target())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		for _, size := range []int{32, 256 << 10, 1 << 20} {
			req, resp := make([]byte, size), make([]byte, 0, size)
			for range 100 {
				resp, _ = s.Call(ctx, "Echo", req, resp)
			}
			allocs := testing.AllocsPerRun(200, func() {
				if resp, err = s.Call(ctx, "Echo", req, resp); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("client %s, %d B: %.3f allocations per call", client, size, allocs)
			if allocs > 0.05 {
				t.Errorf("client %s, %d B: %.3f allocations per call, want 0", client, size, allocs)
			}
		}
	}
}
