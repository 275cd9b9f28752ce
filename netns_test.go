//go:build linux

package erpc_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"
)

// TestLossyNetwork: client and server in two network namespaces joined by a
// veth, each dropping 5 % of the UDP datagrams it receives (nftables). Every
// call succeeds, with the right reply, and every handler runs exactly once.
func TestLossyNetwork(t *testing.T) {
	checkLeaks(t)
	p := testnet.NewPair(t)
	p.Loss(t, p.A, 0.05)
	p.Loss(t, p.B, 0.05)

	var mu sync.Mutex
	runs := map[uint64]int{}
	h := serverWith(t, "Tag", func(_ context.Context, req []byte) ([]byte, error) {
		id := binary.LittleEndian.Uint64(req)
		mu.Lock()
		runs[id]++
		mu.Unlock()
		return append([]byte("ok:"), req[:8]...), nil
	})
	var srv, cli *erpc.Endpoint
	listen := func(ns string, srv *erpc.Server, addr string, out **erpc.Endpoint) {
		t.Helper()
		err := testnet.In(ns, func() (err error) {
			if srv == nil {
				*out, err = erpc.Listen(addr, erpc.Insecure())
			} else {
				*out, err = srv.Listen(addr, erpc.Insecure()) // a namespace's address: plaintext on purpose
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*out).Close() })
	}
	listen(p.A, h, net.JoinHostPort(p.AddrA.String(), "0"), &srv)
	listen(p.B, nil, net.JoinHostPort(p.AddrB.String(), "0"), &cli)
	s, err := cli.Dial(context.Background(), srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const goroutines, calls = 16, 60
	sizes := []int{8, 1000, 5000, 64 << 10}
	var failed atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				id := uint64(g*calls + i + 1)
				req := make([]byte, sizes[i%len(sizes)])
				binary.LittleEndian.PutUint64(req, id)
				resp, err := s.Call(context.Background(), "Tag", req, nil)
				if err != nil || string(resp) != "ok:"+string(req[:8]) {
					failed.Add(1)
					t.Errorf("call %d: %q %v", id, resp, err)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	for id := uint64(1); id <= goroutines*calls; id++ {
		if runs[id] != 1 {
			t.Fatalf("request %d ran %d times", id, runs[id])
		}
	}
	dropped := p.Dropped(t, p.A) + p.Dropped(t, p.B)
	st := cli.Stats()
	if dropped == 0 {
		t.Fatal("the network dropped nothing: the test did not test loss")
	}
	t.Logf("%d calls over 5%% loss each way: %d datagrams dropped, %d retransmitted by the client",
		goroutines*calls, dropped, st.Retransmits)
}
