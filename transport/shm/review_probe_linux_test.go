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

// TestHostileProbeHang: to vouch for a listener address the listener
// stats the claimed socket path and connects to it, in the handshake's
// goroutine, with no deadline (the handshake timeout covers only socket
// reads and writes). A connector that claims the address of a path on a
// file system it serves (FUSE, which an unprivileged user mounts with
// fusermount) and never answers makes that stat block for good: the
// handshake is not dropped after the handshake timeout, keeps its place
// against MaxPeers (every later connector is refused "full"), and Close
// would wait for it forever. Here the FUSE daemon is a /dev/fuse
// descriptor nobody reads (needs root to mount without fusermount).
func TestHostileProbeHang(t *testing.T) {
	const timeout = 500 * time.Millisecond
	shortHandshakes(t, timeout)
	tr, path := hostileListener(t, Options{MaxPeers: 1})
	serveEcho(t, tr)

	mnt := filepath.Join(filepath.Dir(path), "fuse")
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

	sock := filepath.Join(mnt, "s.sock")
	claim, _ := listenerAddr(sock)
	go rawDial(path, minRingSize, rawOpts{seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW, bell: -1, claim: claim, path: sock})

	time.Sleep(timeout + time.Second)
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
