package shm

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// internalPair gives two transports of this process, y listening on a
// socket in a temporary directory and x dialled to it, and the address x
// sends to y at; both are closed and the directory removed at the test's
// end. The internal tests (bells, polling) reach into their connections.
func internalPair(t *testing.T) (x, y *Transport, toY netip.AddrPort) {
	t.Helper()
	dir, err := os.MkdirTemp("", "erpcshm") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if y, err = Listen(filepath.Join(dir, "y.sock"), Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { y.Close() })
	if x, err = Listen("", Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	if toY, err = x.Resolve(filepath.Join(dir, "y.sock")); err != nil {
		t.Fatal(err)
	}
	return x, y, toY
}
