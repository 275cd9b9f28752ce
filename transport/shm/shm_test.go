//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/rpctest"
	"github.com/erpc-go/erpc/transport/shm"
	"github.com/erpc-go/erpc/transport/transporttest"
)

// sockDir is a short temporary directory for sockets (a unix socket path
// is limited to 108 bytes, and test names make t.TempDir long).
func sockDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "erpcshm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// listen opens a transport on a socket in dir and closes it after the test.
func listen(t testing.TB, path string, opts shm.Options) *shm.Transport {
	t.Helper()
	tr, err := shm.Listen(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
		dir := sockDir(t)
		var shms []*shm.Transport
		var paths []string
		for i := range n {
			p := filepath.Join(dir, fmt.Sprintf("t%d.sock", i))
			shms = append(shms, listen(t, p, shm.Options{}))
			paths = append(paths, p)
		}
		// Every pair connected, so that any transport reaches any other
		// by its LocalAddr.
		for i := range shms {
			for j := i + 1; j < n; j++ {
				a, err := shms[i].Resolve(paths[j])
				if err != nil {
					t.Fatal(err)
				}
				if a != shms[j].LocalAddr() {
					t.Fatalf("resolved %s to %v, its transport is %v", paths[j], a, shms[j].LocalAddr())
				}
			}
		}
		trs := make([]transport.Transport, n)
		for i, s := range shms {
			trs[i] = s
		}
		return trs
	})
}

// shmNet is the rpctest.Net of endpoints on shm sockets in one directory.
type shmNet struct {
	dir   string
	mu    sync.Mutex
	n     int
	paths map[*erpc.Endpoint]string
}

func newNet(t *testing.T) *shmNet {
	return &shmNet{dir: sockDir(t), paths: make(map[*erpc.Endpoint]string)}
}

func (s *shmNet) Listen(t *testing.T, srv *erpc.Server, opts ...erpc.Option) *erpc.Endpoint {
	s.mu.Lock()
	s.n++
	path := filepath.Join(s.dir, fmt.Sprintf("ep%d.sock", s.n))
	s.mu.Unlock()
	var ep *erpc.Endpoint
	var err error
	if srv == nil {
		ep, err = erpc.Listen("shm://"+path, opts...)
	} else {
		ep, err = srv.Listen("shm://"+path, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	s.mu.Lock()
	s.paths[ep] = path
	s.mu.Unlock()
	return ep
}

func (s *shmNet) Target(ep *erpc.Endpoint) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "shm://" + s.paths[ep]
}

func TestRPC(t *testing.T) {
	rpctest.RunRPC(t, newNet(t))
}

// TestLargeEcho echoes 8 MiB messages on two sessions of one connection at
// once. What the rings do not hold (see TestRingHoldsWindows) waits in the
// backlog, so datagrams are dropped only when the engine retransmits
// spuriously (its RTO is 1 ms at least, and this test's handler copies
// 8 MiB on the loop).
func TestLargeEcho(t *testing.T) {
	dir := sockDir(t)
	path := filepath.Join(dir, "srv.sock")
	st := listen(t, path, shm.Options{})
	ct := listen(t, "", shm.Options{})
	h := erpc.NewServer()
	h.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := h.Listen("", erpc.WithTransport(st))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli, err := erpc.Listen("", erpc.WithTransport(ct))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var wg sync.WaitGroup
	for i := range 2 {
		s, err := cli.Dial(context.Background(), "shm://"+path)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			req := bytes.Repeat([]byte{byte(i + 1)}, 8<<20)
			for range 3 {
				resp, err := s.Call(context.Background(), "Echo", req, nil)
				if err != nil || !bytes.Equal(resp, req) {
					t.Errorf("8 MiB echo: %d bytes, %v", len(resp), err)
					return
				}
			}
		})
	}
	wg.Wait()
	d, retx := st.Stats().Dropped+ct.Stats().Dropped, cli.Stats().Retransmits
	t.Logf("%d datagrams dropped, %d retransmitted", d, retx)
	if d > 0 && retx == 0 {
		t.Fatalf("%d datagrams dropped without any retransmission", d)
	}
	if p := ct.Stats().Peers; p != 1 {
		t.Fatalf("client has %d connections, want 1", p)
	}
}

// TestCloseReleases checks that closing connected transports ends their
// goroutines, unmaps all their memory and closes all their descriptors
// (sockets, bells).
func TestCloseReleases(t *testing.T) {
	g0 := runtime.NumGoroutine()
	rings, fds := shmMappings(t, "erpc-shm"), openFDs(t)
	dir := sockDir(t)
	var trs []*shm.Transport
	for i := range 4 {
		tr, err := shm.Listen(filepath.Join(dir, fmt.Sprintf("%d.sock", i)), shm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	for i := 1; i < len(trs); i++ {
		if _, err := trs[0].Resolve(filepath.Join(dir, fmt.Sprintf("%d.sock", i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := shmMappings(t, "erpc-shm"); n != rings+4*3 { // each side maps its memory and its peer's
		t.Fatalf("%d ring mappings for 3 connections, want %d", n, rings+12)
	}
	for _, tr := range trs {
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for (runtime.NumGoroutine() > g0 || openFDs(t) > fds) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0 {
		t.Fatalf("%d goroutines after Close, %d before", g, g0)
	}
	if r, f := shmMappings(t, "erpc-shm"), openFDs(t); r != rings || f > fds {
		t.Fatalf("after Close: %d ring mappings and %d descriptors, want %d and %d", r, f, rings, fds)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("socket files left after Close: %v", ents)
	}
}

// openFDs is the number of this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// TestStaleSocket checks that Listen replaces the socket file of a dead
// endpoint but not that of a live one.
func TestStaleSocket(t *testing.T) {
	path := filepath.Join(sockDir(t), "s.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // leaves the file, like a killed process
	tr := listen(t, path, shm.Options{})
	if _, err := shm.Listen(path, shm.Options{}); err == nil {
		t.Fatal("listened on the socket of a live endpoint")
	}
	c := listen(t, "", shm.Options{})
	if a, err := c.Resolve(path); err != nil || a != tr.LocalAddr() {
		t.Fatalf("resolve: %v, %v", a, err)
	}
}

// TestRingHoldsWindows checks the sizing the default ring promises: a
// session's full window of the largest packets the engine sends over shm
// (32 credits of 65,512 bytes), and half as much again, fit in a ring whose
// consumer has not read anything yet: nothing waits in the backlog.
func TestRingHoldsWindows(t *testing.T) {
	a, b := pair(t, shm.Options{})
	const n = 48
	msgs := make([]transport.Message, n)
	p := make([]byte, 64<<10-64) // an engine packet: a 40-byte header and 65,472 bytes of data
	for i := range msgs {
		head := make([]byte, 40)
		head[0] = byte(i)
		msgs[i] = transport.Message{To: b.LocalAddr(), Head: head, Payload: p}
	}
	if err := a.Send(msgs); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Dropped != 0 || st.Backlogged != 0 {
		t.Fatalf("of %d datagrams, %d dropped and %d backlogged", n, st.Dropped, st.Backlogged)
	}
	got := 0
	for i := 0; got < n && i < 1000; i++ {
		k, err := b.Receive(func(_ netip.AddrPort, data []byte) {
			if int(data[0]) != got || len(data) != len(p)+40 {
				t.Fatalf("datagram %d: %d bytes, index %d", got, len(data), data[0])
			}
			got++
		})
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			b.Wait(time.Now().Add(10 * time.Millisecond))
		}
	}
	if got != n {
		t.Fatalf("received %d of %d", got, n)
	}
}

// TestResolveBothWays checks that two transports that resolve each other
// share one connection, and that Resolve reuses an open connection.
func TestResolveBothWays(t *testing.T) {
	dir := sockDir(t)
	pa, pb := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	a, b := listen(t, pa, shm.Options{}), listen(t, pb, shm.Options{})
	for range 2 {
		if addr, err := a.Resolve(pb); err != nil || addr != b.LocalAddr() {
			t.Fatalf("a resolves b: %v, %v", addr, err)
		}
	}
	if addr, err := b.Resolve(pa); err != nil || addr != a.LocalAddr() {
		t.Fatalf("b resolves a: %v, %v", addr, err)
	}
	if pa, pb := a.Stats().Peers, b.Stats().Peers; pa != 1 || pb != 1 {
		t.Fatalf("connections: a has %d, b has %d, want 1 each", pa, pb)
	}
	// Nobody listens on none.sock: the address is the one a listener there
	// would have, and it is reported gone as soon as a send finds it so.
	none := filepath.Join(dir, "none.sock")
	addr, err := a.Resolve(none)
	if err != nil {
		t.Fatal(err)
	}
	a.Send([]transport.Message{{To: addr, Head: []byte("x")}})
	var gone []netip.AddrPort
	for deadline := time.Now().Add(5 * time.Second); len(gone) == 0 && time.Now().Before(deadline); {
		a.Wait(time.Now().Add(10 * time.Millisecond))
		gone = a.GonePeers(gone)
	}
	if len(gone) != 1 || gone[0] != addr {
		t.Fatalf("gone peers %v, want %v", gone, addr)
	}
	c := listen(t, none, shm.Options{})
	if c.LocalAddr() != addr {
		t.Fatalf("listener on %s has address %v, resolved %v", none, c.LocalAddr(), addr)
	}
	if got, err := a.Resolve(none); err != nil || got != addr {
		t.Fatalf("resolve after the listener started: %v, %v", got, err)
	}
}
