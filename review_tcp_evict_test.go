//go:build linux

package erpc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPTwoAddressesOfOneServer: a server listening on all
// interfaces (tcp://0.0.0.0:port) is reached by a listening client
// endpoint at two of its addresses (127.0.0.1 and 127.0.0.2 here; a host's
// loopback and LAN address, or two names, elsewhere). The client dials
// both from its one listening port, so the server sees both connections
// come from the same address and takes the second for the first
// (register), closing the first without a word; the client sees that
// connection end and fails the other session's calls as if the server had
// died (promise 2's Unavailable, for a live server; promise 6's one
// connection per pair). Calls alternate between the two sessions; every
// one should succeed.
func TestReviewTCPTwoAddressesOfOneServer(t *testing.T) {
	srv, err := reviewEchoServer(t).Listen("tcp://0.0.0.0:0", erpc.Insecure()) // plaintext on a wildcard: on purpose (tls_policy.go)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.Target()[strings.LastIndex(srv.Target(), ":")+1:]
	cli, err := erpc.Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ss []*erpc.Session
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		s, err := cli.Dial(ctx, "tcp://"+host+":"+port)
		if err != nil {
			t.Fatalf("dial %s: %v", host, err)
		}
		defer s.Close()
		ss = append(ss, s)
	}
	// Both sessions call at once, as two parts of a program would.
	var mu sync.Mutex
	var fails []string
	const calls = 200
	var wg sync.WaitGroup
	for k, s := range ss {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, uint64(k)))
			for i := range calls {
				req := []byte(fmt.Sprint(k, "/", i))
				cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
				resp, err := s.Call(cctx, "Echo", req, nil)
				ccancel()
				if err != nil || string(resp) != string(req) {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("call %d on session %d: %v", i, k, err))
					mu.Unlock()
				}
				if rng.IntN(8) == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	st := cli.Stats()
	t.Logf("client stats: %+v", st)
	if len(fails) > 0 {
		t.Fatalf("%d of %d calls to a live server failed: %s", len(fails), 2*calls, strings.Join(fails[:min(4, len(fails))], "; "))
	}
}
