//go:build linux

package shm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hangingFUSE mounts, in dir, a FUSE file system whose daemon never
// answers (a /dev/fuse descriptor nobody reads; mounting it needs root),
// and returns the path of a socket in it: a lookup of that path blocks
// until the test ends (the descriptor's close aborts the connection).
func hangingFUSE(t *testing.T, dir string) string {
	mnt := filepath.Join(dir, "fuse")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no FUSE: %v", err)
	}
	if err := unix.Mount("erpcshm-hostile", mnt, "fuse", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d", fd, os.Getuid(), os.Getgid())); err != nil {
		unix.Close(fd)
		t.Skipf("cannot mount FUSE: %v", err)
	}
	t.Cleanup(func() {
		unix.Close(fd) // aborts the connection: the blocked lookups fail
		unix.Unmount(mnt, unix.MNT_DETACH)
	})
	return filepath.Join(mnt, "s.sock")
}

// waitProbes waits (bounded) until tr has n probes in flight.
func waitProbes(tr *Transport, n int32) int32 {
	for end := time.Now().Add(2 * time.Second); tr.probing.Load() != n && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	return tr.probing.Load()
}

// TestHostileProbeHang: to vouch for a listener address the listener
// stats the claimed socket path and connects to it. A connector that
// claims the address of a path on a file system it serves (FUSE, which an
// unprivileged user mounts with fusermount) and never answers makes that
// stat block for good. It once ran in the handshake's goroutine with no
// deadline: the handshake was not dropped after the handshake timeout,
// kept its place against MaxPeers (every later connector was refused
// "full"), and Close waited for it forever. The probe now runs in a
// goroutine of its own that the handshake waits for only until its
// deadline (the probe stays blocked: asserted), and Close not at all.
func TestHostileProbeHang(t *testing.T) {
	const timeout = 500 * time.Millisecond
	shortHandshakes(t, timeout)
	tr, path := hostileListener(t, Options{MaxPeers: 1})
	serveEcho(t, tr)
	sock := hangingFUSE(t, filepath.Dir(path))
	claim, _ := listenerAddr(sock)
	go rawDial(path, minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim, path: sock})
	if n := waitProbes(tr, 1); n != 1 {
		t.Fatalf("%d probes in flight, want the hostile one", n)
	}

	time.Sleep(timeout + time.Second)
	if n := tr.probing.Load(); n != 1 {
		t.Fatalf("%d probes in flight after the handshake timeout, want the hostile one, still blocked", n)
	}
	if err := echo(path); err != nil {
		tr.mu.Lock()
		n := tr.accepting
		tr.mu.Unlock()
		t.Errorf("%v after the hostile hello (handshake timeout %v) an honest peer cannot connect: %v (%d handshake still held)", timeout+time.Second, timeout, err, n)
	}
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Error("Close did not return within 2 s")
	}
}

// TestHostileProbesBounded: many connectors claim listener addresses on a
// file system that never answers. At most maxProbes probes block (a thread
// each); the claims beyond are not vouched for (assigned addresses,
// counted in Stats.Unverified) at once, and the blocked ones fail their
// handshakes at the deadline.
func TestHostileProbesBounded(t *testing.T) {
	const timeout = 300 * time.Millisecond
	shortHandshakes(t, timeout)
	tr, path := hostileListener(t, Options{})
	sock := hangingFUSE(t, filepath.Dir(path))
	claim, _ := listenerAddr(sock)
	const n = 3 * maxProbes
	type result struct {
		ok     bool
		status string
	}
	results := make(chan result, n)
	for range n {
		go func() {
			p, st, _ := rawDial(path, minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim, path: sock})
			if p != nil {
				t.Cleanup(func() { unix.Close(p.sock); unix.Munmap(p.mem) })
			}
			results <- result{p != nil, st}
		}()
	}
	connected, failed := 0, 0
	for range n {
		select {
		case r := <-results:
			if r.ok {
				connected++
			} else {
				failed++
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("handshakes still running 5 s on (%d connected, %d failed)", connected, failed)
		}
	}
	if p := tr.probing.Load(); p != maxProbes {
		t.Errorf("%d probes in flight, want maxProbes (%d) blocked", p, maxProbes)
	}
	if u := tr.Stats().Unverified; connected != n-maxProbes || failed != maxProbes || u != uint64(connected) {
		t.Errorf("%d connected (%d unverified), %d failed; want %d connected, all unverified, %d failed", connected, u, failed, n-maxProbes, maxProbes)
	}
}

// TestHostileProbeHangSparesOthers: while a probe blocks on a file system
// that never answers (here in the watch of the claimed socket's directory,
// whose lookup blocks), the checks of other claims go on (they share the
// process's directory watches, whose lock the blocked one must not hold),
// and the loop's GonePeers, which releases watches, does not wait for it.
func TestHostileProbeHangSparesOthers(t *testing.T) {
	shortHandshakes(t, 500*time.Millisecond)
	tr, path := hostileListener(t, Options{})
	sock := hangingFUSE(t, filepath.Dir(path))
	// A socket in a directory of the file system: the lookup of that
	// directory, for its watch, blocks already.
	sock = filepath.Join(filepath.Dir(sock), "sub", "s.sock")
	claim, _ := listenerAddr(sock)
	go rawDial(path, minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim, path: sock})
	if n := waitProbes(tr, 1); n != 1 {
		t.Fatalf("%d probes in flight, want the hostile one", n)
	}
	time.Sleep(50 * time.Millisecond) // blocked in the file system by now

	v, err := Listen(filepath.Join(filepath.Dir(path), "v.sock"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := v.Resolve(path); err != nil {
		t.Fatalf("an honest listener cannot connect while a probe hangs: %v", err)
	}
	t.Logf("connected in %v", time.Since(start))
	waitConns(t, tr, 1)
	if c := tr.snap.Load().byAddr[v.LocalAddr()]; c == nil || tr.Stats().Unverified != 0 {
		t.Fatalf("the honest listener's claim was not vouched for while a probe hangs (%d unverified)", tr.Stats().Unverified)
	}
	v.Close()
	released := make(chan struct{})
	go func() {
		defer close(released)
		for end := time.Now().Add(5 * time.Second); tr.Stats().Peers != 0 && time.Now().Before(end); time.Sleep(time.Millisecond) {
		}
		tr.GonePeers(nil) // releases the connection and its directory watch
	}()
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("GonePeers blocked behind the hanging probe")
	}
	if n := tr.probing.Load(); n != 1 {
		t.Fatalf("%d probes in flight, want the hostile one still blocked", n)
	}
}
