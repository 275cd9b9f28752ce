//go:build linux

package shm

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const punchEnv = "ERPC_SHM_PUNCH_SOCKET" // "listener path|bytes left unpunched at the ring's start"

// TestHolePunchHelper is a peer process that keeps the size of its memfd
// (the seals allow that) but, again and again, fills its ring (which the
// listener reads) and punches a hole over it (fallocate PUNCH_HOLE).
func TestHolePunchHelper(t *testing.T) {
	path, skipArg, _ := strings.Cut(os.Getenv(punchEnv), "|")
	if path == "" {
		t.Skip("runs only as the punching process")
	}
	skip, _ := strconv.Atoi(skipArg)
	const ring = 1 << 30
	p, st, err := rawDial(path, ring, rawOpts{bell: -1, seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW})
	say("HANDSHAKE %s %s", st, errText(err))
	if p == nil {
		return
	}
	for i := 0; ; i++ {
		// Every page of the ring allocated (zeroed: no stamp matches).
		unix.Fallocate(p.memfd, 0, pageSize, ring)
		start := time.Now()
		err := unix.Fallocate(p.memfd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(pageSize+skip), int64(ring-skip))
		say("PUNCH %d %v %s", i, time.Since(start), errText(err))
	}
}

// TestHostileHolePunchStall: while a punch is in progress, tmpfs makes a
// fault in the punched range wait until the punch is done (shmem_fault,
// shmem_falloc_wait). The punch unmapped the page under the listener's
// read position, so the listener's next look at that ring (one atomic
// load of a stamp, in Receive, Poll or Wait) faults and waits for the
// whole punch, which takes as long as the peer makes it (the more pages
// it filled, up to a 1 GiB ring): one Receive that takes no record holds
// the loop for tens of milliseconds. The control run, the same peer
// leaving the ring's first pages alone, shows the stall comes from that
// wait.
func TestHostileHolePunchStall(t *testing.T) {
	for _, c := range []struct {
		name string
		skip int
	}{{"control", 2 * pageSize}, {"punch-read-position", 0}} {
		t.Run(c.name, func(t *testing.T) {
			tr, path := hostileListener(t, Options{})
			h := startHelperProcess(t, "TestHolePunchHelper", punchEnv+"="+path+"|"+strconv.Itoa(c.skip))
			h.expect(t, "HANDSHAKE ok")
			var worst time.Duration
			records := 0
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				start := time.Now()
				tr.Receive(func(netip.AddrPort, []byte) { records++ })
				worst = max(worst, time.Since(start))
			}
			h.expect(t, "PUNCH ")
			if worst > 150*time.Millisecond { // far above this machine's scheduling noise (the control run)
				t.Fatalf("one Receive held the loop %v (%d records taken in all) while a peer punched holes in its ring", worst, records)
			}
			t.Logf("worst Receive %v", worst)
		})
	}
}
