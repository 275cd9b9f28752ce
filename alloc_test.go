package erpc_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/rpctest"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rawEcho serves "Echo" the zero-allocation way, with a handler that
// builds its response in the endpoint's response buffer, and "EchoInPlace"
// with the request's own buffer.
func rawEcho(t testing.TB) *erpc.Server {
	srv := erpc.NewServer()
	// OnLoop: never handed off. Under the race detector on a loaded
	// machine the 64 KiB copy outlasts the 100 us handoff threshold, and
	// each handoff starts a goroutine, which counted as one allocation per
	// call; what is measured here is the call path, not handoff.
	if err := srv.HandleRaw("Echo", func(r erpc.Request) {
		out := r.ResponseBuffer(len(r.Data()))
		copy(out, r.Data())
		r.Respond(out)
	}, erpc.OnLoop()); err != nil {
		t.Fatal(err)
	}
	if err := srv.HandleRaw("EchoInPlace", func(r erpc.Request) { r.Respond(r.Data()) }, erpc.OnLoop()); err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestCallAllocs counts heap allocations per 32-byte call on the raw-bytes
// path, client and server together (both in this process), over memnet and
// over real UDP sockets (on Linux, the recvmmsg/sendmmsg path), and over
// UDP with TLS (every packet sealed and opened).
func TestCallAllocs(t *testing.T) {
	t.Run("memnet", func(t *testing.T) { testCallAllocs(t, newMemNet()) })
	t.Run("udp", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("the portable UDP path allocates per datagram; the zero-allocation path is Linux's")
		}
		testCallAllocs(t, udpNet{})
	})
	t.Run("udp-tls", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("the portable UDP path allocates per datagram; the zero-allocation path is Linux's")
		}
		testCallAllocs(t, tlsNet{udpNet{}, newTestPKI(t)})
	})
}

func testCallAllocs(t *testing.T, n rpctest.Net) {
	srv := n.Listen(t, rawEcho(t))
	s := dialT(t, n, n.Listen(t, nil), srv)
	ctx := context.Background()
	for _, size := range []int{32, 64 << 10} {
		req, resp := make([]byte, size), make([]byte, 0, size)
		// The race detector checks every byte a 64 KiB call copies, which
		// made this test take 45 s: a tenth of the runs keeps it short there.
		warm, runs := 300, 1000
		if streamRace && size > 32 {
			warm, runs = 30, 100
		}
		for _, method := range []string{"Echo", "EchoInPlace"} {
			for range warm {
				resp, _ = s.Call(ctx, method, req, resp)
			}
			allocs := testing.AllocsPerRun(runs, func() {
				var err error
				if resp, err = s.Call(ctx, method, req, resp); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("%s, %d B: %.3f allocations per call (client + server + transport)", method, size, allocs)
			if allocs > 0.05 {
				t.Fatalf("%s, %d B: %.3f allocations per call, want 0", method, size, allocs)
			}
		}
	}
}

// TestTypedCallAllocs: a protobuf call through Register and Invoke
// allocates what the messages need (the request and response messages,
// their encodings, their strings) and no more: six per call, client and
// server together, with the method's typed ID cached after the first call.
func TestTypedCallAllocs(t *testing.T) {
	n := newMemNet()
	srv := erpc.NewServer()
	if err := erpc.Register(srv, "Echo", func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return req, nil
	}); err != nil {
		t.Fatal(err)
	}
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, srv))
	ctx := context.Background()
	req := wrapperspb.String("0123456789abcdef0123456789abcdef")
	call := func() {
		if _, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Echo", req); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 {
		call()
	}
	allocs := testing.AllocsPerRun(1000, call)
	t.Logf("%.2f allocations per typed call", allocs)
	if allocs > 6.1 {
		t.Fatalf("%.2f allocations per typed call, want at most 6 (7 before the typed ID cache)", allocs)
	}
}
