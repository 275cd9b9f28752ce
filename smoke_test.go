package erpc

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestSmokeEcho(t *testing.T) {
	for _, addr := range []string{"mem://smoke-server", "udp://127.0.0.1:0"} {
		srv, err := Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) { return req, nil })
		target := addr
		if addr[:3] == "udp" {
			target = srv.Addr().String()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := Dial(ctx, target)
		if err != nil {
			t.Fatal(addr, err)
		}
		for _, n := range []int{0, 5, 1500, 100000} {
			req := bytes.Repeat([]byte{7}, n)
			resp, err := s.Call(ctx, "Echo", req, nil)
			if err != nil || !bytes.Equal(resp, req) {
				t.Fatalf("%s: %d bytes: %v (%d back)", addr, n, err, len(resp))
			}
		}
		cancel()
		s.Close()
		srv.Close()
	}
}
