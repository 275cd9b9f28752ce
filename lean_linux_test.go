//go:build linux

package erpc_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestLeanPathOverSharedMemory: sessions over shared memory take the
// engine's lean path (the transport delivers every datagram: no loss
// detection, and only a 100 ms safety-net timer) and sessions over UDP
// do not. The same server, whose
// handler holds its event loop (handoff off) for 40 ms (longer than the 5 ms timeout of
// a same-host session), is called over both: the UDP client resends (the
// fault this test relies on, asserted), the shm client does not, and over
// both the handler runs exactly once per call.
func TestLeanPathOverSharedMemory(t *testing.T) {
	var runs atomic.Int32
	srv := erpc.NewServer()
	if err := srv.HandleRaw("Stall", func(r erpc.Request) {
		runs.Add(1)
		time.Sleep(40 * time.Millisecond)
		r.Respond(nil)
	}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	for _, c := range []struct {
		name, listen, client string
		wantRetx             bool
	}{
		{"udp", "127.0.0.1:0", "127.0.0.1:0", true},
		{"shm", "shm://" + sock, "shm://", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs.Store(0)
			ep, err := srv.Listen(c.listen, erpc.WithHandoff(-1)) // the stall must hold the loop
			if err != nil {
				t.Fatal(err)
			}
			defer ep.Close()
			cli, err := erpc.Listen(c.client)
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			s, err := cli.Dial(context.Background(), ep.Target())
			if err != nil {
				t.Fatal(err)
			}
			const calls = 3
			for range calls {
				if _, err := s.Call(context.Background(), "Stall", nil, nil); err != nil {
					t.Fatal(err)
				}
			}
			retx := cli.Stats().Retransmits
			t.Logf("%s: %d retransmissions (%d spurious), %d handler runs", c.name, retx, cli.Stats().SpuriousTimeouts, runs.Load())
			if c.wantRetx && retx == 0 {
				t.Fatalf("%s: no retransmission while the server stalled 40 ms: the stall did not happen", c.name)
			}
			if !c.wantRetx && retx != 0 {
				t.Fatalf("%s: %d retransmissions on the lean path", c.name, retx)
			}
			if n := runs.Load(); n != calls {
				t.Fatalf("%s: handler ran %d times for %d calls", c.name, n, calls)
			}
		})
	}
}
