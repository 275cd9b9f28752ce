package erpc_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/rpctest"
)

// rawEcho serves "Echo" the zero-allocation way: in place, into the slot's
// own response buffer.
func rawEcho(t testing.TB, srv *erpc.Endpoint) {
	if err := srv.HandleRaw("Echo", func(r *erpc.Request) {
		out := r.ResponseBuffer(len(r.Data()))
		copy(out, r.Data())
		r.Respond(out)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCallAllocs counts heap allocations per 32-byte call on the raw-bytes
// path, client and server together (both in this process), over memnet and
// over real UDP sockets (on Linux, the recvmmsg/sendmmsg path).
func TestCallAllocs(t *testing.T) {
	t.Run("memnet", func(t *testing.T) { testCallAllocs(t, newMemNet()) })
	t.Run("udp", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("the portable UDP path allocates per datagram; the zero-allocation path is Linux's")
		}
		testCallAllocs(t, udpNet{})
	})
}

func testCallAllocs(t *testing.T, n rpctest.Net) {
	srv := n.Listen(t)
	rawEcho(t, srv)
	s := dialT(t, n, n.Listen(t), srv)
	req, resp := make([]byte, 32), make([]byte, 0, 64)
	ctx := context.Background()
	for range 1000 {
		resp, _ = s.Call(ctx, "Echo", req, resp)
	}
	allocs := testing.AllocsPerRun(2000, func() {
		var err error
		if resp, err = s.Call(ctx, "Echo", req, resp); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.3f allocations per call (client + server + transport)", allocs)
	if allocs > 0.05 {
		t.Fatalf("%.3f allocations per call, want 0", allocs)
	}
}
