//go:build linux

package xdp

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewRPCGenericKernelUDPClient (promise 2, "erpc runs over it and
// interoperates with plain-UDP peers", in generic mode, which promise 1
// covers): an erpc server over AF_XDP in generic mode, a client over the
// kernel's UDP; echo calls of seeded sizes from 1 B to 64 KiB (a large
// request leaves the client as GSO trains of equal datagrams), each
// within 10 s.
func TestReviewRPCGenericKernelUDPClient(t *testing.T) {
	for _, mode := range []string{"native", "generic"} {
		t.Run(mode, func(t *testing.T) {
			p := newVethPair(t)
			srv := erpc.NewServer()
			if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
				t.Fatal(err)
			}
			x := listenXDP(t, p, p.A, p.AddrA, Options{AttachMode: mode})
			var ep *erpc.Endpoint
			in(t, p.A, func() (err error) {
				ep, err = srv.Listen("", erpc.WithTransport(x), erpc.Insecure(), erpc.WithoutCongestionControl())
				return err
			})
			t.Cleanup(func() { ep.Close() })
			var cli *erpc.Endpoint
			in(t, p.B, func() (err error) {
				cli, err = erpc.Listen(p.AddrB.String()+":0", erpc.Insecure(), erpc.WithoutCongestionControl())
				return err
			})
			t.Cleanup(func() { cli.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := cli.Dial(ctx, ep.Target())
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(31, 32))
			for i, size := range []int{1, 1000, 3000, 20000, 65536} {
				req := make([]byte, size)
				for j := range req {
					req[j] = byte(r.Uint32())
				}
				cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				resp, err := s.Call(cctx, "Echo", req, nil)
				ccancel()
				if err != nil || !bytes.Equal(resp, req) {
					t.Fatalf("%s: call %d of %d bytes: %d bytes back after %v, %v; server transport %+v", x.Mode(), i, size, len(resp), time.Since(start).Round(time.Millisecond), err, x.Stats())
				}
			}
			t.Logf("%s: all calls echoed; server transport %+v", x.Mode(), x.Stats())
		})
	}
}
