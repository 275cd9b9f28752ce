package tcp_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/erpc-go/erpc"
)

// TestCallAllocs: a call over TCP allocates nothing in steady state,
// client, server and both transports together (the loop's writev, the
// readers, the inbox), at 32 B and at 64 KiB.
func TestCallAllocs(t *testing.T) {
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
	n := &tcpNet{}
	s, err := n.Listen(t, nil).Dial(context.Background(), n.Target(n.Listen(t, srv)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, size := range []int{32, 64 << 10} {
		req, resp := make([]byte, size), make([]byte, 0, size)
		for range 300 {
			resp, _ = s.Call(ctx, "Echo", req, resp)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if resp, err = s.Call(ctx, "Echo", req, resp); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%d B: %.3f allocations per call", size, allocs)
		if allocs > 0.05 {
			t.Fatalf("%d B: %.3f allocations per call, want 0", size, allocs)
		}
	}
}
