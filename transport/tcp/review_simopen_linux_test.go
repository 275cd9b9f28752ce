//go:build linux

package tcp_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/tcp"
)

const simOpenEnv = "ERPC_REVIEW_SIMOPEN_NS"

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestReviewSimultaneousOpen: promise 6's "two only when both dial at
// once" meets TCP's simultaneous open, which is what two listening
// endpoints dialing each other from their listening ports get whenever
// their SYNs cross (any real RTT; here forced in a network namespace of
// the test's own: SYNs are dropped until both dials wait in SYN_SENT, so
// the retransmitted ones cross). Both ends of the one connection are then
// dialers, and each writes what it queued while dialing with blocking
// writes before its loop starts reading (startIO). With more queued on
// each side than the kernel buffers hold (14 MiB, under the 16 MiB
// outbox), neither ever reads: the connection stays up, both loops
// never see a frame from it, and everything either side sends later
// queues and is dropped, until the process restarts.
func TestReviewSimultaneousOpen(t *testing.T) {
	if ns := os.Getenv(simOpenEnv); ns != "" {
		simOpenInNS(t, ns)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nft")
	}
	// The control first: a datagram each way, so the crossing itself is
	// shown to work; then 14 MiB each way.
	for _, mib := range []string{"1dgram", "14"} {
		ns := fmt.Sprintf("erpc-rev-simopen-%d-%s", os.Getpid(), mib)
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		run(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
		cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestReviewSimultaneousOpen$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), simOpenEnv+"="+mib)
		out, err := cmd.CombinedOutput()
		t.Logf("in namespace %s, %s (MiB, or one datagram) each way:\n%s", ns, mib, out)
		if err != nil {
			t.Fatalf("the pair in the namespace failed with %s (MiB) queued each way: %v", mib, err)
		}
	}
}

func simOpenInNS(t *testing.T, mib string) {
	run(t, "nft", "add", "table", "inet", "rev")
	run(t, "nft", "add", "chain", "inet", "rev", "in", "{ type filter hook input priority 0; }")
	run(t, "nft", "add", "rule", "inet", "rev", "in", "tcp", "flags", "&", "(syn|ack)", "==", "syn", "drop")
	a, err := tcp.Listen("127.0.0.1:0", tcp.Options{DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := tcp.Listen("127.0.0.1:0", tcp.Options{DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const size = 60 << 10
	count := 1
	if mib == "14" {
		count = 14 << 20 / size
	}
	payload := make([]byte, size)
	send := func(from, to *tcp.Transport) {
		var msgs []transport.Message
		for i := range count {
			msgs = append(msgs, transport.Message{To: to.LocalAddr(), Head: binary.BigEndian.AppendUint32(nil, uint32(i)), Payload: payload})
		}
		if err := from.Send(msgs); err != nil {
			t.Fatal(err)
		}
	}
	send(a, b)
	send(b, a)
	time.Sleep(300 * time.Millisecond) // both dials in SYN_SENT
	run(t, "nft", "delete", "table", "inet", "rev")
	var got [2]int
	end := time.Now().Add(8 * time.Second)
	for time.Now().Before(end) && (got[0] < count || got[1] < count) {
		for i, tr := range []*tcp.Transport{a, b} {
			tr.Receive(func(_ netip.AddrPort, d []byte) { got[i]++ })
			tr.GonePeers(nil)
			tr.Wait(time.Now().Add(2 * time.Millisecond))
		}
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("a %+v", sa)
	t.Logf("b %+v", sb)
	simultaneous := sa.Accepted == 0 && sb.Accepted == 0 && sa.Dialed == 1 && sb.Dialed == 1
	t.Logf("simultaneous open: %v", simultaneous)
	if got[0] < count-int(sb.Dropped) || got[1] < count-int(sa.Dropped) {
		t.Fatalf("after 8 s, a received %d and b %d of the %d datagrams each sent (%d and %d dropped); connections up: a %d, b %d",
			got[0], got[1], count, sb.Dropped, sa.Dropped, sa.Conns, sb.Conns)
	}
}
