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
// do not. The same server, whose handler holds its event loop (handoff
// off) for 40 ms (longer than the 5 ms timeout of a same-host session),
// is called over both: the UDP client resends (the fault this test
// relies on, asserted), the shm client does not, and over both the
// handler runs exactly once per call. On a loaded host the UDP
// session's round trips, and so its timeout, can grow past 40 ms: its
// stall then doubles, call after call, up to 320 ms (beyond the longest
// timeout, 200 ms), until the client has resent.
func TestLeanPathOverSharedMemory(t *testing.T) {
	var runs, stallMs atomic.Int32
	srv := erpc.NewServer()
	if err := srv.HandleRaw("Stall", func(r erpc.Request) {
		runs.Add(1)
		time.Sleep(time.Duration(stallMs.Load()) * time.Millisecond)
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
			stallMs.Store(40)
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
			calls := int32(0)
			for calls < 3 || (c.wantRetx && cli.Stats().Retransmits == 0 && stallMs.Load() < 320) {
				if calls >= 3 {
					stallMs.Store(2 * stallMs.Load()) // the UDP session's timeout grew past the stall
				}
				if _, err := s.Call(context.Background(), "Stall", nil, nil); err != nil {
					t.Fatal(err)
				}
				calls++
			}
			retx := cli.Stats().Retransmits
			t.Logf("%s: %d retransmissions (%d spurious), %d handler runs, last stall %d ms", c.name, retx, cli.Stats().SpuriousTimeouts, runs.Load(), stallMs.Load())
			if c.wantRetx && retx == 0 {
				t.Fatalf("%s: no retransmission while the server stalled up to %d ms: the stall did not happen", c.name, stallMs.Load())
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
