//go:build linux

// Package testnet builds small test networks out of Linux network
// namespaces, for tests and benchmarks, and tears them down when the test
// ends (failed or not). It needs root and the ip, tc and nft tools; tests
// skip with a message where they are missing. The root namespace is never
// touched.
//
//   - Pair: two hosts joined by a veth, with random loss by nftables.
//   - Star: N client hosts and a server on a bridge, with an optional
//     bottleneck (TBF or HTB) and random loss on the port toward the
//     server, its counters (Stats) and a 1 ms backlog sampler: incast.
//   - TwoPath: a client and a server joined by two links with ECMP hashed
//     on the UDP 5-tuple and a fixed seed, so a source port selects a
//     known path (PathOf, SpreadPorts); each path can be shaped.
//
// BenchmarkIncast and BenchmarkTwoPath in example_test.go show both in use.
// Boost raises the test's priority so that other processes on the machine
// do not stall its senders (a stalled sender empties the bottleneck's queue
// and the measured rate drops).
//
// The builders take a TB: a test's *testing.T or *testing.B, or a
// program's own (erpc-bench builds these networks outside of tests).
//
// Sockets belong to the namespace of the thread that opens them, so In runs
// a function with its thread switched into a host's namespace: an endpoint
// opened there sends and receives over the veth, whatever thread its event
// loop runs on later.
package testnet

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// TB is what the builders need from their caller: *testing.T and
// *testing.B satisfy it, and a program that is not a test (erpc-bench)
// brings its own, whose Cleanup runs when the program is done with the
// network, whose Skip and Fatal end the run with the message.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skip(args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
}

// Pair is two namespaces, A and B, joined by a veth link.
type Pair struct {
	A, B         string     // namespace names
	AddrA, AddrB netip.Addr // their addresses on the link
}

var seq atomic.Int32

// NewPair creates the pair, or skips the test if it cannot.
func NewPair(t TB) *Pair {
	t.Helper()
	need(t, "ip", "nft")
	n := seq.Add(1)
	id := fmt.Sprintf("e%d-%d", os.Getpid()%100000, n) // interface names: at most 15 bytes
	subnet := 200 + int(n)%50
	p := &Pair{
		A: id + "a", B: id + "b",
		AddrA: netip.AddrFrom4([4]byte{10, 213, byte(subnet), 1}),
		AddrB: netip.AddrFrom4([4]byte{10, 213, byte(subnet), 2}),
	}
	t.Cleanup(func() {
		run(t, "ip", "netns", "del", p.A)
		run(t, "ip", "netns", "del", p.B)
	})
	// As root with the tools installed, a setup failure is a real failure,
	// not a reason to skip.
	must := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("testnet: %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	must("ip", "netns", "add", p.A)
	must("ip", "netns", "add", p.B)
	must("ip", "link", "add", "veth-"+id, "netns", p.A, "type", "veth", "peer", "name", "veth-"+id, "netns", p.B)
	for _, h := range []struct {
		ns   string
		addr netip.Addr
	}{{p.A, p.AddrA}, {p.B, p.AddrB}} {
		must("ip", "-n", h.ns, "addr", "add", h.addr.String()+"/24", "dev", "veth-"+id)
		must("ip", "-n", h.ns, "link", "set", "veth-"+id, "up")
		must("ip", "-n", h.ns, "link", "set", "lo", "up")
	}
	return p
}

func run(t TB, args ...string) {
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Logf("testnet: %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Loss makes namespace ns drop the given fraction of the UDP datagrams it
// receives, at random (nftables numgen), and counts the drops. It replaces
// the rule of an earlier Loss in ns (and its count); 0 removes it.
func (p *Pair) Loss(t TB, ns string, fraction float64) {
	t.Helper()
	p.LossOf(t, ns, fraction, "udp")
}

// LossOf is Loss for the packets of the given protocols (nftables l4proto
// names: "udp", "tcp"), for comparing a UDP protocol with TCP under the
// same loss.
func (p *Pair) LossOf(t TB, ns string, fraction float64, protos ...string) {
	t.Helper()
	// "table" then "delete table" in one transaction: remove the old rule
	// whether or not there was one.
	rules := "table inet erpcloss\ndelete table inet erpcloss\n"
	if fraction > 0 {
		rules += fmt.Sprintf(`table inet erpcloss {
	chain input {
		type filter hook input priority 0; policy accept;
		meta l4proto { %s } numgen random mod 1000000 < %d counter drop
	}
}
`, strings.Join(protos, ", "), int(fraction*1e6))
	}
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testnet: nft in %s: %v: %s", ns, err, out)
	}
}

var countRE = regexp.MustCompile(`counter packets (\d+)`)

// Dropped is how many datagrams the loss rule of ns has dropped (0 when
// there is none).
func (p *Pair) Dropped(t TB, ns string) int {
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "inet", "erpcloss").CombinedOutput()
	if err != nil && strings.Contains(string(out), "No such file") {
		return 0
	}
	if err != nil {
		t.Fatalf("testnet: nft list: %v: %s", err, out)
	}
	m := countRE.FindSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// In runs fn with the calling thread in namespace ns.
func In(ns string, fn func() error) error {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := setns(target.Fd()); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("testnet: setns %s: %w", ns, err)
	}
	ferr := fn()
	if err := setns(self.Fd()); err != nil {
		// The thread is stuck in ns: leave it locked so the runtime
		// discards it when this goroutine exits.
		return fmt.Errorf("testnet: returning from %s: %w", ns, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func setns(fd uintptr) error { return unix.Setns(int(fd), unix.CLONE_NEWNET) }
