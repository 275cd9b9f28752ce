//go:build linux

package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/erpc-go/erpc/transport"
)

func fdCount(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// mapped reports whether /proc/self/maps has a mapping of exactly
// [lo, lo+size).
func mapped(t testing.TB, lo, size uint64) bool {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		var a, z uint64
		if _, err := fmtSscanf(line, &a, &z); err == nil && a == lo && z == lo+size {
			return true
		}
	}
	return false
}

// TestReviewLifecycle: Listen twice on one interface fails with an error
// naming the cause and leaves the first transport working; Close while
// datagrams pour in and a loop goroutine receives returns, detaches the
// program (ip link shows no xdp), releases the XSK sockets (ss --xdp),
// file descriptors and the UMEM mappings; Listen on the same interface
// right after works, ten times.
func TestReviewLifecycle(t *testing.T) {
	p := newVethPair(t)
	macA, macB := macOf(t, p.A, p.ifname), macOf(t, p.B, p.ifname)
	raw := openRaw(t, p.B, p.ifname)
	fds0 := fdCount(t)
	var stop atomic.Bool
	var target atomic.Value // netip.AddrPort
	var flood sync.WaitGroup
	flood.Go(func() {
		for !stop.Load() {
			to, _ := target.Load().(netip.AddrPort)
			if !to.IsValid() {
				time.Sleep(time.Millisecond)
				continue
			}
			for range 32 {
				raw.send(t, v4frame(macB, macA, netip.AddrPortFrom(p.AddrB, 7777), to, []byte("flood flood flood")))
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	defer func() { stop.Store(true); flood.Wait() }()
	port := uint16(0)
	for i := range 10 {
		var tr transport.Transport
		in(t, p.A, func() (err error) {
			tr, err = Listen(p.ifname, netip.AddrPortFrom(p.AddrA, port), Options{})
			return err
		})
		x := tr.(*Transport)
		port = x.LocalAddr().Port() // the same address each time
		target.Store(x.LocalAddr())
		if i == 0 {
			var err2 error
			in(t, p.A, func() error {
				_, err2 = Listen(p.ifname, netip.AddrPortFrom(p.AddrA, 0), Options{})
				return nil
			})
			t.Logf("second Listen on %s: %v", p.ifname, err2)
			if err2 == nil {
				t.Errorf("a second Listen on one interface succeeded")
			} else if !errors.Is(err2, ErrNotAttachable) && !errors.Is(err2, ErrKernel) && !errors.Is(err2, ErrPermission) && !errors.Is(err2, ErrNoInterface) {
				t.Errorf("second Listen: %v matches none of the sentinel errors", err2)
			}
		}
		var loop sync.WaitGroup
		var received atomic.Int64
		var loopErr atomic.Value
		loop.Go(func() {
			for {
				if _, err := x.Receive(func(netip.AddrPort, []byte) { received.Add(1) }); err != nil {
					loopErr.Store(err)
					return
				}
				if err := x.Wait(time.Now().Add(10 * time.Millisecond)); err != nil {
					loopErr.Store(err)
					return
				}
			}
		})
		deadline := time.Now().Add(3 * time.Second)
		for received.Load() < 100 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if received.Load() < 100 {
			t.Errorf("listen %d: the loop received %d datagrams of the flood in 3 s", i, received.Load())
		}
		umem := uint64(uintptr(unsafe.Pointer(&x.xsks[0].umem[0])))
		if !mapped(t, umem, numFrames*frameSize) {
			t.Fatalf("cannot find the UMEM in /proc/self/maps")
		}
		if err := x.Close(); err != nil {
			t.Errorf("close %d: %v", i, err)
		}
		loop.Wait()
		if err, _ := loopErr.Load().(error); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("listen %d: the loop ended with %v, want ErrClosed", i, err)
		}
		if mapped(t, umem, numFrames*frameSize) {
			t.Errorf("after Close %d the UMEM is still mapped", i)
		}
		if out := sh(t, "ip", "-n", p.A, "link", "show", "dev", p.ifname); strings.Contains(out, "xdp") {
			t.Errorf("after Close %d the interface still has a program: %s", i, out)
		}
	}
	target.Store(netip.AddrPort{})
	var xsks string
	for range 50 { // the kernel releases XSK sockets in deferred work
		xsks = strings.TrimSpace(sh(t, "ip", "netns", "exec", p.A, "ss", "--xdp", "-a", "-H"))
		if xsks == "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if xsks != "" {
		t.Errorf("XDP sockets left after Close: %s", xsks)
	}
	if fds := fdCount(t); fds != fds0 {
		t.Errorf("after 10 Listen/Close: %d file descriptors (%d before)", fds, fds0)
	}
}

func fmtSscanf(line string, lo, hi *uint64) (int, error) {
	return fmt.Sscanf(line, "%x-%x", lo, hi)
}

// TestReviewCloseInsideReceive: Close "may be called from any goroutine";
// it waits for "the loop call in progress" to return, so when the loop's
// own fn (inside Receive) closes the transport, Close waits for itself:
// it never returns. (A kernel UDP transport closes fine there.) The loop
// runs in a goroutine here so that the test can report the hang; that
// goroutine stays stuck until the process exits.
func TestReviewCloseInsideReceive(t *testing.T) {
	p := newVethPair(t)
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	b := listenUDP(t, p.B, p.AddrB)
	if err := b.Send([]transport.Message{{To: x.LocalAddr(), Payload: []byte("close me")}}); err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			n, err := x.Receive(func(netip.AddrPort, []byte) { x.Close() })
			if n > 0 || err != nil {
				return
			}
			x.Wait(deadline)
		}
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Errorf("Close called inside Receive's fn has not returned after 5 s: it waits for the Receive it is called from")
	}
}
