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

const punchEnv = "ERPC_SHM_PUNCH_SOCKET"

// monotonic is CLOCK_MONOTONIC, which both processes share.
func monotonic() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// TestHolePunchHelper is a peer process that keeps the size of its memfd
// but, again and again, allocates every page of its ring (which the
// listener reads) and punches a hole over it (fallocate PUNCH_HOLE), as
// the SHRINK and GROW seals once allowed. It also tries to punch the
// listener's memfd, and MADV_REMOVE over its own mapping (a punch too).
// It reports when each punch starts and ends, and how it ended.
func TestHolePunchHelper(t *testing.T) {
	path := os.Getenv(punchEnv)
	if path == "" {
		t.Skip("runs only as the punching process")
	}
	const ring = 1 << 30
	p, st, err := rawDial(path, ring, rawOpts{bell: -1, seals: sealsNeeded})
	say("HANDSHAKE %s %s", st, errText(err))
	if p == nil {
		return
	}
	say("PUNCHPEER %s", errText(unix.Fallocate(p.peerMemfd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, pageSize, ring)))
	say("MADVREMOVE %s", errText(unix.Madvise(p.mem[pageSize:], unix.MADV_REMOVE)))
	for {
		unix.Fallocate(p.memfd, 0, pageSize, ring) // zeroed pages: no stamp matches
		say("PUNCH %d", monotonic())
		err := unix.Fallocate(p.memfd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, pageSize, ring)
		say("DONE %d %s", monotonic(), errText(err))
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHostileHolePunchStall: a peer punches a hole over its own ring
// (fallocate PUNCH_HOLE over pages it filled: the SHRINK and GROW seals
// allowed it). The punch unmaps the page under the listener's read
// position, and while a punch is in progress tmpfs makes a fault in the
// punched range wait until it is done (shmem_fault, shmem_falloc_wait).
// So the listener's next look at that ring (one atomic load of a stamp,
// in Receive, Poll or Wait) waits for the whole punch, which takes as
// long as the peer makes it (here, 1 GiB of pages: hundreds of ms). A
// Receive that takes no record holds the loop until the peer's punch ends:
// it returned within a millisecond or so of the punch's end (just before
// the peer's fallocate returns), each time. Now every memfd a side maps
// from its peer carries F_SEAL_FUTURE_WRITE, under which tmpfs refuses
// punching (EPERM, asserted: its own memfd, ours, and MADV_REMOVE), and no
// Receive waits for the peer.
func TestHostileHolePunchStall(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	h := startHelperProcess(t, "TestHolePunchHelper", punchEnv+"="+path)
	h.expect(t, "HANDSHAKE ok")
	for _, what := range []string{"PUNCHPEER ", "MADVREMOVE "} {
		if l := h.expect(t, what); l != what+unix.EPERM.Error() {
			t.Errorf("%q, want the punch refused", l)
		}
	}
	tr.Receive(func(netip.AddrPort, []byte) {}) // maps the read position's page
	held := 0
	var report []string
	const rounds = 3
	for range rounds {
		h.expect(t, "PUNCH ")
		time.Sleep(5 * time.Millisecond) // the punch starts by unmapping the range
		start := monotonic()
		records := 0
		tr.Receive(func(netip.AddrPort, []byte) { records++ })
		end := monotonic()
		f := strings.Fields(h.expect(t, "DONE "))
		done, _ := strconv.ParseInt(f[1], 10, 64)
		if res := strings.Join(f[2:], " "); res != unix.EPERM.Error() {
			t.Errorf("the peer's punch of its own ring: %q, want refused", res)
		}
		after := end - time.Duration(done)
		report = append(report, (end-start).String()+" (returned "+after.String()+" after the punch ended)")
		if records == 0 && end-start > 20*time.Millisecond && after > -5*time.Millisecond && after < 5*time.Millisecond {
			held++
		}
		tr.Receive(func(netip.AddrPort, []byte) {}) // maps the page again
	}
	if held > 0 {
		t.Fatalf("%d of %d Receives, taking no record, held the loop until the peer's punch ended: %s", held, rounds, strings.Join(report, "; "))
	}
	t.Logf("Receives: %s", strings.Join(report, "; "))
}
