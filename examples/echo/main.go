// Command echo starts an erpc server and a client on loopback UDP, makes
// echo calls of several sizes, checks every reply, and prints round-trip
// statistics. It exits non-zero if any call fails or comes back wrong.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/erpc-go/erpc"
)

func main() {
	// The server: handlers first, then an endpoint that serves them.
	srv := erpc.NewServer()
	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
		return req, nil // the endpoint keeps req as the response: no copy
	})
	ep, err := srv.Listen("127.0.0.1:0")
	check(err)
	defer ep.Close()

	// The client: a session to the server.
	ctx := context.Background()
	s, err := erpc.Dial(ctx, ep.Target())
	check(err)
	defer s.Close()

	fmt.Printf("erpc echo over UDP loopback (%s), one call in flight\n", ep.Target())
	fmt.Printf("%10s %7s %10s %10s %10s %10s\n", "size", "calls", "p50", "p99", "max", "MB/s")
	for _, size := range []struct{ bytes, calls int }{
		{32, 5000}, {1 << 10, 5000}, {16 << 10, 1000}, {256 << 10, 100}, {1 << 20, 30}, {8 << 20, 5},
	} {
		req := make([]byte, size.bytes)
		for i := range req {
			req[i] = byte(i*31 + size.bytes)
		}
		var resp []byte
		rtts := make([]time.Duration, 0, size.calls)
		start := time.Now()
		for range size.calls {
			t0 := time.Now()
			resp, err = s.Call(ctx, "Echo", req, resp)
			rtts = append(rtts, time.Since(t0))
			check(err)
			if !bytes.Equal(resp, req) {
				fail("echo of %d bytes came back wrong", size.bytes)
			}
		}
		elapsed := time.Since(start)
		slices.Sort(rtts)
		mbps := float64(2*size.bytes*size.calls) / elapsed.Seconds() / 1e6
		fmt.Printf("%10s %7d %10v %10v %10v %10.1f\n", human(size.bytes), size.calls,
			rtts[len(rtts)/2].Round(100*time.Nanosecond), rtts[len(rtts)*99/100].Round(100*time.Nanosecond),
			rtts[len(rtts)-1].Round(100*time.Nanosecond), mbps)
	}
	st := s.Endpoint().Stats()
	fmt.Printf("client: %d packets sent, %d retransmitted; all replies checked\n", st.PacketsOut, st.Retransmits)
}

func human(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "echo: "+format+"\n", args...)
	os.Exit(1)
}
