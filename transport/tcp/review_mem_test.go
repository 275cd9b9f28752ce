package tcp_test

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestReviewSilentConnMemory: promise 5, "memory is bounded", and the doc's
// "Neither can make the transport panic or hold more than its bounds":
// what does a connection that never sends a byte cost the listener? Each
// accepted connection allocates its full read buffer (4 B + MaxDatagram +
// 64 KiB, about 320 KiB) before the peer's preface is checked, and holds
// it for DialTimeout (5 s). Anyone who can open TCP connections to the
// port, with no erpc at all, so holds MaxConns x 320 KiB (1.3 GiB at the
// default 4096) of the server's heap, renewed every 5 s. The assertion is
// the reviewer's bound: an unauthenticated, silent connection should cost
// at most 64 KiB (a preface needs 10 bytes).
func TestReviewSilentConnMemory(t *testing.T) {
	tr := listen(t, "127.0.0.1:0")
	const n = 128
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", tr.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	until(t, "the connections to be accepted", func() bool { return tr.Stats().Accepted == n })
	time.Sleep(100 * time.Millisecond) // their set-up goroutines reach the preface read
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d silent connections: %d bytes of heap each; at MaxConns 4096: %d MiB", n, per, per*4096>>20)
	if per > 64<<10 {
		t.Fatalf("a connection that has sent nothing holds %d KiB of the listener's heap (%d MiB at the default MaxConns of 4096, for DialTimeout each)",
			per>>10, per*4096>>20)
	}
}
