//go:build linux

package shm

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

const pidReuseEnv = "ERPC_SHM_REVIEW_PIDREUSE" // "client|path" or "claim|path|address"

// TestHostilePidReuseHelper is a client that connects to the listener at
// path and exits ("client"), or a process that claims a given client
// address there ("claim").
func TestHostilePidReuseHelper(t *testing.T) {
	f := strings.Split(os.Getenv(pidReuseEnv), "|")
	switch f[0] {
	case "client":
		cli, err := Listen("", Options{})
		if err != nil {
			say("ERR %v", err)
			return
		}
		if _, err := cli.Resolve(f[1]); err != nil {
			say("ERR %v", err)
			return
		}
		say("ADDR %s %d", cli.LocalAddr(), os.Getpid())
		os.Exit(0)
	case "claim":
		claim := netip.MustParseAddrPort(f[2])
		p, st, err := rawDial(f[1], minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim})
		say("HANDSHAKE %s %s", st, errText(err))
		if p != nil {
			time.Sleep(time.Minute)
		}
	default:
		t.Skip("runs only as a helper process")
	}
}

// TestHostileClientAddressAfterPidReuse: a client address is the client's
// pid and 48 random bits, and the listener takes a claimed client address
// when the pid in it is the connector's. Every listener a client connects
// to learns its address (the hello). Once the client exits, its pid is
// free, and another process that gets it (pids wrap; here the test picks
// it through ns_last_pid, as root) claims the dead client's address and
// gets it: its datagrams arrive from the other process's address. ("No
// process can be taken for another: their pids differ" holds only among
// live processes.) Fixed: a client address also holds its process's start
// time in clock ticks, which the listener checks (/proc/<pid>/stat); the
// claimer, started in a later tick, is known by an assigned address
// (counted in Unverified).
func TestHostileClientAddressAfterPidReuse(t *testing.T) {
	v, pathV := hostileListener(t, Options{})
	c := startHelperProcess(t, "TestHostilePidReuseHelper", pidReuseEnv+"=client|"+pathV)
	f := strings.Fields(c.expect(t, "ADDR "))
	addr, pid := f[1], f[2]
	pc, _ := strconv.Atoi(pid)
	for end := time.Now().Add(5 * time.Second); v.Stats().Peers != 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	v.GonePeers(nil)
	c.cmd.Wait() // reaped: its pid is free
	// Start times are in clock ticks (10 ms): a process that gets the pid
	// in the very tick the client started in would pass for it (the
	// documented boundary). Start the claimer in a later one.
	time.Sleep(20 * time.Millisecond)
	var h *hostile
	for range 20 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(fmt.Sprint(pc-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid: %v", err)
		}
		h = startHelperProcess(t, "TestHostilePidReuseHelper", pidReuseEnv+"=claim|"+pathV+"|"+addr)
		if h.cmd.Process.Pid == pc {
			break
		}
		h.kill()
		h = nil
	}
	if h == nil {
		t.Skip("did not get the dead client's pid")
	}
	h.expect(t, "HANDSHAKE ok")
	want := netip.MustParseAddrPort(addr)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if c := v.snap.Load().byAddr[want]; c != nil {
			t.Fatalf("process %d (the dead client's pid, reused) is known by the dead client's address %v", h.cmd.Process.Pid, want)
		}
	}
	if st := v.Stats(); st.Unverified != 1 || st.Peers != 1 {
		t.Fatalf("the claimer should be connected and known by an assigned address: %+v", st)
	}
}
