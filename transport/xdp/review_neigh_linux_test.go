//go:build linux

package xdp

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/wire"
	"github.com/erpc-go/erpc/transport"
)

// probeCounter counts, with nftables in namespace ns, the datagrams the
// namespace sends to UDP port 9 of ip: the probes Send makes the kernel
// send to resolve a MAC.
func probeCounter(t *testing.T, ns string, ip netip.Addr) func() int {
	t.Helper()
	rules := fmt.Sprintf(`table inet erpcrev {
	chain out {
		type filter hook output priority 0; policy accept;
		ip daddr %s udp dport 9 counter
	}
}
`, ip)
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	re := regexp.MustCompile(`counter packets (\d+)`)
	return func() int {
		out := sh(t, "ip", "netns", "exec", ns, "nft", "list", "table", "inet", "erpcrev")
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no counter in %s", out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
}

// TestReviewUnresolvablePeerStallsEverySend: the doc says Send waits up
// to a second for the kernel to resolve a new next hop, "blocking the
// event loop once per new peer". A failed resolution is not remembered:
// every Send to a peer that does not answer ARP probes it again and
// blocks again, and one Send to several such peers blocks a second per
// peer. The assertion counts the probes (nftables, no timing): at most
// one for the same peer. The times are logged.
func TestReviewUnresolvablePeerStallsEverySend(t *testing.T) {
	p := newVethPair(t)
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	a4 := p.AddrA.As4()
	ghost := netip.AddrFrom4([4]byte{a4[0], a4[1], a4[2], 77})
	probes := probeCounter(t, p.A, ghost)
	b := listenUDP(t, p.B, p.AddrB)
	timed := func(msgs []transport.Message) time.Duration {
		start := time.Now()
		if err := x.Send(msgs); err != nil {
			t.Fatal(err)
		}
		return time.Since(start).Round(time.Millisecond)
	}
	first := timed([]transport.Message{{To: b.LocalAddr(), Payload: []byte("hello")}})
	t.Logf("first Send to a live new peer (ARP over veth): blocked %v", first)
	var stalls []time.Duration
	for range 3 {
		stalls = append(stalls, timed([]transport.Message{{To: netip.AddrPortFrom(ghost, 7000), Payload: []byte("x")}}))
	}
	var batch []transport.Message
	for i := range 3 {
		batch = append(batch, transport.Message{To: netip.AddrPortFrom(netip.AddrFrom4([4]byte{a4[0], a4[1], a4[2], byte(80 + i)}), 7000), Payload: []byte("y")})
	}
	batch = append(batch, transport.Message{To: b.LocalAddr(), Payload: []byte("behind them")})
	one := timed(batch)
	t.Logf("three Sends to one unresolvable peer blocked %v; one Send to three unresolvable peers (and a live one) blocked %v; stats %+v",
		stalls, one, x.Stats())
	if n := probes(); n > 1 {
		t.Errorf("the same unresolvable peer was probed %d times by 3 Sends (each blocking the loop): the doc promises a block once per new peer", n)
	}
}

// TestReviewSpoofedSourceStallsServer: a hostile sender on the link sends
// an erpc server over AF_XDP three request packets naming no session,
// from a spoofed source on the subnet that answers no ARP. The engine
// answers each with a reset, and Send blocks the server's loop while it
// waits for a MAC that never comes; a legitimate client's calls wait with
// it. The assertion is on the probes (no timing); the legitimate call's
// latency is logged.
func TestReviewSpoofedSourceStallsServer(t *testing.T) {
	p := newVethPair(t)
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	var ep *erpc.Endpoint
	in(t, p.A, func() (err error) {
		ep, err = srv.Listen("", erpc.WithTransport(x), erpc.Insecure())
		return err
	})
	t.Cleanup(func() { ep.Close() })
	var cli *erpc.Endpoint
	in(t, p.B, func() (err error) {
		cli, err = erpc.Listen(p.AddrB.String()+":0", erpc.Insecure())
		return err
	})
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	call := func() string {
		start := time.Now()
		_, err := s.Call(ctx, "Echo", []byte("hi"), nil)
		d := time.Since(start).Round(100 * time.Microsecond)
		if err != nil {
			return fmt.Sprintf("failed after %v: %v", d, err)
		}
		return fmt.Sprintf("ok in %v", d)
	}
	before := call()
	if !strings.HasPrefix(before, "ok") {
		t.Fatalf("before the attack: %s", before)
	}
	a4 := p.AddrA.As4()
	ghost := netip.AddrFrom4([4]byte{a4[0], a4[1], a4[2], 66})
	probes := probeCounter(t, p.A, ghost)
	raw := openRaw(t, p.B, p.ifname)
	macA, macB := macOf(t, p.A, p.ifname), macOf(t, p.B, p.ifname)
	for i := range 3 {
		h := wire.Header{Type: wire.TypeReq, Session: 0xdead0000 + uint32(i), Token: 1, ReqNum: 1, MsgSize: 1}
		pkt := wire.AppendHeader(nil, &h)
		pkt = append(pkt, 'z')
		raw.send(t, v4frame(macB, macA, netip.AddrPortFrom(ghost, 4242), x.LocalAddr(), pkt))
	}
	time.Sleep(5 * time.Millisecond) // let the server's loop take them
	during := call()
	after := call()
	t.Logf("legitimate Echo call: %s before; %s right after 3 spoofed packets; then %s; server transport %+v", before, during, after, x.Stats())
	if !strings.HasPrefix(during, "ok") {
		t.Errorf("a legitimate call made after 3 spoofed packets %s", during)
	}
	if n := probes(); n > 1 {
		t.Errorf("3 spoofed packets from one unresolvable source made the server probe it %d times, each blocking its loop up to 1 s", n)
	}
}

// TestReviewPeerMACChangeNeverRecovers: the doc says MACs are read again
// every 30 s. The AF_XDP client in A talks to a kernel UDP server in B;
// B's interface then gets a new MAC (a replaced host or VM keeping its
// IP; B sends no gratuitous ARP, Linux's default). A's sends go to the old
// MAC, which B drops, for 30 s as documented; but after that the
// transport reads the kernel's neighbour table, whose entry for B still
// holds the old MAC: the kernel revalidates an entry only when it sends
// through it itself, and it never does, since AF_XDP bypasses it. The
// test waits past the 30 s and then expects a datagram to arrive (a
// kernel UDP socket in A is the control: the kernel's own sends recover).
func TestReviewPeerMACChangeNeverRecovers(t *testing.T) {
	p := newVethPair(t)
	a := listenXDP(t, p, p.A, p.AddrA, Options{})
	b := listenUDP(t, p.B, p.AddrB)
	send := func(s string) {
		if err := a.Send([]transport.Message{{To: b.LocalAddr(), Payload: []byte(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	send("before")
	if got := rcollect(t, b, 1, 3*time.Second); len(got) != 1 {
		t.Fatalf("before the change: %d datagrams", len(got))
	}
	// B answers, so that A's kernel knows B well (REACHABLE).
	if err := b.Send([]transport.Message{{To: a.LocalAddr(), Payload: []byte("answer")}}); err != nil {
		t.Fatal(err)
	}
	rcollect(t, a, 1, 3*time.Second)
	sh(t, "ip", "-n", p.B, "link", "set", "dev", p.ifname, "address", "02:00:00:be:ef:02")
	send("within 30 s")
	inWindow := len(rcollect(t, b, 1, time.Second))
	t.Logf("within the 30 s: %d of 1 delivered; waiting past the refresh", inWindow)
	time.Sleep(neighTTL + 2*time.Second)
	var delivered []int
	for i := range 5 {
		send(fmt.Sprintf("after %d", i))
		delivered = append(delivered, len(rcollect(t, b, 1, 300*time.Millisecond)))
	}
	neigh := sh(t, "ip", "-n", p.A, "neigh", "show", "dev", p.ifname)
	t.Logf("after the refresh: delivered %v; A's neighbour table: %s", delivered, strings.TrimSpace(neigh))
	if delivered[len(delivered)-1] == 0 {
		t.Errorf("%v after the MAC refresh: the transport still sends to the peer's old MAC, from the kernel's never-revalidated entry", neighTTL+2*time.Second)
	}
	// Control: a datagram from the kernel's own UDP socket in A.
	k := listenUDP(t, p.A, p.AddrA)
	ok := false
	for range 10 {
		if err := k.Send([]transport.Message{{To: b.LocalAddr(), Payload: []byte("kernel")}}); err != nil {
			t.Fatal(err)
		}
		if len(rcollect(t, b, 1, time.Second)) == 1 {
			ok = true
			break
		}
	}
	t.Logf("control: the kernel's own UDP socket in A reached B: %v; neighbour table now: %s", ok,
		strings.TrimSpace(sh(t, "ip", "-n", p.A, "neigh", "show", "dev", p.ifname)))
}
