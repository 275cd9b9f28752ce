//go:build linux

package testnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// What the builders need from the machine.
var toolPackage = map[string]string{"ip": "iproute2", "tc": "iproute2", "nft": "nftables"}

// need skips the test unless it runs as root, with the capabilities to
// create namespaces, and with the given tools installed.
func need(tb TB, tools ...string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("testnet: needs root to create network namespaces")
	}
	if !hasCaps() {
		tb.Skip("testnet: root without CAP_SYS_ADMIN and CAP_NET_ADMIN (an unprivileged container?): cannot create network namespaces")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("testnet: %s not installed (apt-get install %s)", tool, toolPackage[tool])
		}
	}
}

// hasCaps reports whether this process has CAP_SYS_ADMIN (to mount the
// namespace files and setns) and CAP_NET_ADMIN (links, qdiscs, nft).
func hasCaps() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return true // cannot tell; let the commands fail loudly
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return true
			}
			const sysAdmin, netAdmin = 1 << 21, 1 << 12
			return caps&sysAdmin != 0 && caps&netAdmin != 0
		}
	}
	return true
}

// newID names one test network: "e<pid>-<n>". Namespace names start with
// it, so that Leftovers can find what this process made. Interface names
// are short and local to their namespace.
func newID() string {
	n := seq.Add(1)
	return fmt.Sprintf("%s%d", nsPrefix(), n)
}

func nsPrefix() string { return fmt.Sprintf("e%d-", os.Getpid()%100000) }

// newSubnet picks a 10.x.y.0/24 for one link or switch, from the pid and a
// counter, so that concurrent test binaries (and the networks of one
// binary) get different ranges. The addresses only ever exist inside our
// namespaces, so a clash could not disturb the host anyway; distinct ranges
// just keep captures and error messages unambiguous. 10.213.x is NewPair's.
func newSubnet() [3]byte {
	n := seq.Add(1)
	return [3]byte{10, byte(20 + os.Getpid()%180), byte(n)}
}

// runCmd runs a command, with stdin if given, and returns its output; the
// error names the command and carries its output.
func runCmd(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command(args[0], args[1:]...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String() + stdout.String())
		if stdin != "" {
			msg += "\ninput:\n" + stdin
		}
		return stdout.Bytes(), fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return stdout.Bytes(), nil
}

// batch runs one ip (or tc) process over many commands: "ip -n ns -batch -".
// ns "" runs them where the test runs, for commands that name their
// namespaces themselves (netns add, link add ... netns X).
func batch(tool, ns string, lines []string) error {
	args := []string{tool}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	args = append(args, "-batch", "-")
	_, err := runCmd(strings.Join(lines, "\n")+"\n", args...)
	return err
}

// addNamespaces creates the namespaces and registers their deletion first,
// so that a setup that fails half-way is still torn down.
func addNamespaces(tb TB, names ...string) {
	tb.Helper()
	tb.Cleanup(func() {
		if err := deleteNamespaces(names...); err != nil {
			tb.Errorf("testnet: teardown: %v", err)
		}
	})
	lines := make([]string, len(names))
	for i, n := range names {
		lines[i] = "netns add " + n
	}
	if err := batch("ip", "", lines); err != nil {
		tb.Fatalf("testnet: %v", err)
	}
}

// deleteNamespaces deletes those of the namespaces that exist. Deleting a
// namespace deletes its links, qdiscs and nft tables (once the last socket
// opened in it is closed).
func deleteNamespaces(names ...string) error {
	var lines []string
	for _, n := range names {
		if _, err := os.Stat("/var/run/netns/" + n); err == nil {
			lines = append(lines, "netns del "+n)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return batch("ip", "", lines)
}

// Leftovers lists the namespaces this process created that still exist
// (per "ip netns list"). After all tests have run, it should be empty.
func Leftovers() ([]string, error) {
	out, err := runCmd("", "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var ours []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if strings.HasPrefix(name, nsPrefix()) {
			ours = append(ours, name)
		}
	}
	return ours, sc.Err()
}

// ourName matches the namespace names this package makes: "e<pid>-<n>"
// and a, b (Pair, TwoPath), sw, s or c<i> (Star).
var ourName = regexp.MustCompile(`^e(\d+)-\d+(a|b|sw|s|c\d+)$`)

// RemoveStale deletes namespaces left behind by test binaries that were
// killed before their cleanups ran (a timeout, a crash): names of our form
// whose pid (modulo 100000) matches no running process. It returns what it
// deleted.
func RemoveStale() ([]string, error) {
	out, err := runCmd("", "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	live := map[int]bool{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			live[pid%100000] = true
		}
	}
	var stale []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		m := ourName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); !live[pid] {
			stale = append(stale, name)
		}
	}
	return stale, deleteNamespaces(stale...)
}

// sysctls sets sysctls (dotted names, as for sysctl -w) in namespace ns by
// writing /proc/sys from a thread inside it: /proc/sys/net shows the
// namespace of the thread that opens it. Names in optional are skipped when
// the kernel does not have them.
func sysctls(ns string, kv [][2]string, optional ...string) error {
	return In(ns, func() error {
		for _, p := range kv {
			path := "/proc/sys/" + strings.ReplaceAll(p[0], ".", "/")
			err := os.WriteFile(path, []byte(p[1]), 0)
			if errors.Is(err, os.ErrNotExist) && slices.Contains(optional, p[0]) {
				continue
			}
			if err != nil {
				return fmt.Errorf("testnet: sysctl %s=%s in %s: %w", p[0], p[1], ns, err)
			}
		}
		return nil
	})
}

// quietNamespace is what every namespace of ours gets before its links
// exist: no IPv6 (its link-local addresses, router and neighbour
// solicitations would add stray packets to the counters) and no reverse
// path filter (ECMP sends a source address out of the other link).
var quietNamespace = [][2]string{
	{"net.ipv6.conf.all.disable_ipv6", "1"},
	{"net.ipv6.conf.default.disable_ipv6", "1"},
	{"net.ipv4.conf.all.rp_filter", "0"},
	{"net.ipv4.conf.default.rp_filter", "0"},
}

var quietOptional = []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"}

// Boost raises the scheduling priority of every thread of this process to
// nice -10 until the test ends, so that the senders, the sink and the
// softirq work they do inline win the CPU over other processes (such as
// the other test binaries "go test ./..." runs at the same time): on a
// busy machine a sender that stalls for more than the bottleneck's queue
// (64 KiB at 100 Mbit/s is 5 ms) leaves the link idle and the measured rate
// low. Threads started later inherit the priority.
func Boost(tb TB) {
	tb.Helper()
	set := func(prio int) error {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, prio); err != nil && err != unix.ESRCH {
				return err
			}
		}
		return nil
	}
	old, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		tb.Fatalf("testnet: getpriority: %v", err)
	}
	if err := set(-10); err != nil {
		tb.Logf("testnet: cannot raise the priority: %v", err)
		return
	}
	tb.Cleanup(func() { set(20 - old) }) // getpriority returns 20 - nice
}
