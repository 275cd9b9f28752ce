//go:build linux

package testnet

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// StarConfig describes a Star.
type StarConfig struct {
	Clients int // client hosts, 1 to 200

	// Bottleneck shapes the bridge port toward the server (its egress: all
	// traffic from the clients to the server). Zero Rate: none.
	Bottleneck Shape

	// Loss drops this fraction of the UDP datagrams forwarded toward the
	// server, at random (nftables numgen on the bridge, before the
	// bottleneck's queue). 0: none.
	Loss float64
}

// Star is an incast testbed: client hosts and one server host, each in its
// own namespace with one veth ("eth0") to a bridge that lives in a
// namespace of its own. All hosts share one /24. The root namespace is
// never touched. Open sockets with In(star.Clients[i], ...) and
// In(star.Server, ...). For rate measurements on a machine that runs other
// work, call Boost too.
type Star struct {
	Switch  string   // namespace of the bridge br0
	Server  string   // server namespace
	Clients []string // client namespaces

	Prefix      netip.Prefix // the hosts' /24
	ServerAddr  netip.Addr   // .1
	ClientAddrs []netip.Addr // .2, .3, ...

	// ServerPort is the bridge port toward the server (a device in Switch):
	// where the bottleneck and the loss act. ClientPorts[i] leads to
	// Clients[i].
	ServerPort  string
	ClientPorts []string
}

// HostDev is the name of every host's device toward the bridge.
const HostDev = "eth0"

const starLossTable = "erpcstar"

// NewStar builds the star, or skips the test if this machine cannot (not
// root, ip or tc missing; nft missing when Loss is set). It is torn down
// when the test ends, failed or not.
func NewStar(tb TB, cfg StarConfig) *Star {
	tb.Helper()
	if cfg.Loss > 0 {
		need(tb, "ip", "tc", "nft")
	} else {
		need(tb, "ip", "tc")
	}
	if cfg.Clients < 1 || cfg.Clients > 200 {
		tb.Fatalf("testnet: NewStar: %d clients, want 1 to 200", cfg.Clients)
	}
	id := newID()
	sub := newSubnet()
	s := &Star{
		Switch:     id + "sw",
		Server:     id + "s",
		Prefix:     netip.PrefixFrom(netip.AddrFrom4([4]byte{sub[0], sub[1], sub[2], 0}), 24),
		ServerAddr: netip.AddrFrom4([4]byte{sub[0], sub[1], sub[2], 1}),
		ServerPort: "srv",
	}
	for i := range cfg.Clients {
		s.Clients = append(s.Clients, id+"c"+strconv.Itoa(i))
		s.ClientAddrs = append(s.ClientAddrs, netip.AddrFrom4([4]byte{sub[0], sub[1], sub[2], byte(2 + i)}))
		s.ClientPorts = append(s.ClientPorts, "c"+strconv.Itoa(i))
	}
	all := append([]string{s.Switch, s.Server}, s.Clients...)
	addNamespaces(tb, all...)
	for _, ns := range all {
		if err := sysctls(ns, quietNamespace, quietOptional...); err != nil {
			tb.Fatal(err)
		}
	}

	// The switch: a bridge and one veth per host, created from inside the
	// switch namespace with the far end put straight into the host's.
	sw := []string{"link add br0 type bridge", "link set br0 up"}
	hosts := append([]string{s.Server}, s.Clients...)
	ports := append([]string{s.ServerPort}, s.ClientPorts...)
	addrs := append([]netip.Addr{s.ServerAddr}, s.ClientAddrs...)
	for i, h := range hosts {
		sw = append(sw,
			fmt.Sprintf("link add %s type veth peer name %s netns %s", ports[i], HostDev, h),
			fmt.Sprintf("link set %s master br0 up", ports[i]))
	}
	if err := batch("ip", s.Switch, sw); err != nil {
		tb.Fatalf("testnet: %v", err)
	}
	for i, h := range hosts {
		err := batch("ip", h, []string{
			fmt.Sprintf("addr add %s/24 dev %s", addrs[i], HostDev),
			"link set " + HostDev + " up",
			"link set lo up",
		})
		if err != nil {
			tb.Fatalf("testnet: %v", err)
		}
	}
	if cfg.Bottleneck.Rate > 0 {
		s.SetBottleneck(tb, cfg.Bottleneck)
	}
	if cfg.Loss > 0 {
		s.SetLoss(tb, cfg.Loss)
	}
	return s
}

// Bottleneck is the root qdisc of the bridge port toward the server.
func (s *Star) Bottleneck() Qdisc { return Qdisc{s.Switch, s.ServerPort} }

// SetBottleneck replaces the shaping toward the server (zero Rate removes
// it). The counters start again from zero.
func (s *Star) SetBottleneck(tb TB, sh Shape) {
	tb.Helper()
	if err := sh.apply(s.Switch, s.ServerPort); err != nil {
		tb.Fatal(err)
	}
}

// Stats reads the bottleneck's counters (tc -s -j qdisc show).
func (s *Star) Stats(tb TB) QdiscStats {
	tb.Helper()
	st, err := s.Bottleneck().Stats()
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// SampleBacklog reads the bottleneck every interval for d and returns the
// samples; it blocks, so run it beside the traffic (or use
// Bottleneck().StartSampler).
func (s *Star) SampleBacklog(tb TB, every, d time.Duration) []BacklogSample {
	tb.Helper()
	sm, err := s.Bottleneck().StartSampler(every)
	if err != nil {
		tb.Fatal(err)
	}
	time.Sleep(d)
	samples, err := sm.Stop()
	if err != nil {
		tb.Fatal(err)
	}
	return samples
}

// SetLoss makes the bridge drop this fraction of the UDP datagrams it
// forwards toward the server, at random, and count them (0 removes the
// rule). The count starts again from zero.
func (s *Star) SetLoss(tb TB, fraction float64) {
	tb.Helper()
	need(tb, "nft")
	// "table" then "delete table" in one transaction: remove the old rule
	// whether or not there was one.
	rules := fmt.Sprintf("table bridge %[1]s\ndelete table bridge %[1]s\n", starLossTable)
	if fraction > 0 {
		rules += fmt.Sprintf(`table bridge %s {
	chain lossy {
		type filter hook forward priority 0; policy accept;
		oifname %q meta l4proto udp numgen random mod 1000000 < %d counter drop
	}
}
`, starLossTable, s.ServerPort, int(fraction*1e6))
	}
	if _, err := runCmd(rules, "ip", "netns", "exec", s.Switch, "nft", "-f", "-"); err != nil {
		tb.Fatalf("testnet: %v", err)
	}
}

// LossDropped is how many datagrams the loss rule has dropped.
func (s *Star) LossDropped(tb TB) uint64 {
	tb.Helper()
	out, err := runCmd("", "ip", "netns", "exec", s.Switch, "nft", "list", "table", "bridge", starLossTable)
	if err != nil {
		if strings.Contains(err.Error(), "No such file") {
			return 0 // no loss rule
		}
		tb.Fatalf("testnet: %v", err)
	}
	m := countRE.FindSubmatch(out)
	if m == nil {
		tb.Fatalf("testnet: no counter in %s", out)
	}
	n, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return n
}
