//go:build linux

package testnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// DefaultSeed is the fib_multipath_hash_seed a TwoPath uses unless told
// otherwise.
const DefaultSeed = 12345

// DefaultService is B's service address unless told otherwise. Unlike the
// link subnets it is the same in every TwoPath: the destination address
// enters the hash, so with a fixed seed and a fixed service address a UDP
// source port takes the same path in every run (on the same kernel). It
// exists only inside the TwoPath's namespaces, so concurrent test binaries
// cannot clash over it.
var DefaultService = netip.AddrFrom4([4]byte{10, 99, 0, 1})

// DefaultClient is A's host address unless told otherwise: like Service,
// a /32 on the loopback, reached from B over both paths.
var DefaultClient = netip.AddrFrom4([4]byte{10, 98, 0, 1})

// TwoPathConfig describes a TwoPath.
type TwoPathConfig struct {
	Seed    uint32     // fib_multipath_hash_seed in A; 0 means DefaultSeed
	Service netip.Addr // B's service address; zero means DefaultService
	Client  netip.Addr // A's host address; zero means DefaultClient
}

// TwoPath is a multipath testbed: a client namespace A and a server
// namespace B joined by two veth pairs, the paths 0 and 1. B's Service
// address (a /32 on its loopback) is reached from A by an ECMP route over
// both links, hashed on the 5-tuple (fib_multipath_hash_policy=1) with a
// fixed seed, so a UDP source port maps to a known path.
//
// Open client sockets in A bound to the unspecified address ("0.0.0.0:port"
// or ":port") and send to Service, connected or not: PathOf then tells their
// path. Do not bind them to a link address unless you mean to pin the path:
// the kernel prefers the nexthop whose device owns the source address (on
// 6.18 a socket bound to AddrA[i] always left by path i, whatever its port).
// Replies from B go back over the link whose address the client used as its
// source, so over the same path. A client with several sockets (a
// multipath client: one source port per path) binds them to Client
// instead, so that its server sees one host on every path, and asks
// ClientPathsOf; replies to Client take one of the links, the same for
// all (B hashes on the addresses only), unshaped.
//
// Which to trust: PathOf asks A's kernel ("ip route get <Service> ipproto
// udp sport X dport Y"), which hashes exactly as it will for the socket's
// datagrams, because in this layout A itself makes the ECMP choice, with a
// source address of 0 at lookup time. TestTwoPathPrediction checks it on
// every run against the link counters, for unconnected and connected
// sockets and against ProbePath (it has matched in every case on kernel
// 6.18). io.md saw mismatches where routers in between did the hashing on
// the real packet headers; in such a layout, or if that test ever fails,
// use ProbePath, which sends and reads the counters.
type TwoPath struct {
	A, B    string     // namespaces: client, server
	Service netip.Addr // on B's loopback; routed over both paths

	// Client is A's host address, on its loopback, routed from B over both
	// paths. A socket bound to it sends with the same source address
	// whichever path its port hashes onto, as a host behind an ECMP
	// fabric does (a socket bound to the unspecified address takes the
	// address of its path's link, so a multipath client's ports would
	// show the server two hosts). ClientPathsOf tells such a socket's
	// path: the source address enters the hash.
	Client netip.Addr

	// Path i joins DevA[i] (address AddrA[i]) in A to DevB[i] (AddrB[i])
	// in B, each pair on its own /24.
	AddrA, AddrB [2]netip.Addr
	DevA, DevB   [2]string

	// Seed is A's fib_multipath_hash_seed. The path of a flow depends on
	// the seed, Service and the two ports only (the source address of an
	// unbound socket is still 0 when the route is chosen).
	Seed      uint32
	SeedFixed bool // false on kernels without fib_multipath_hash_seed (before 6.11): the map then changes per build
}

// NewTwoPath builds the two paths, or skips the test if this machine
// cannot (not root, ip or tc missing). It is torn down when the test ends,
// failed or not.
func NewTwoPath(tb TB, cfg TwoPathConfig) *TwoPath {
	tb.Helper()
	need(tb, "ip", "tc")
	if cfg.Seed == 0 {
		cfg.Seed = DefaultSeed
	}
	if !cfg.Service.IsValid() {
		cfg.Service = DefaultService
	}
	if !cfg.Client.IsValid() {
		cfg.Client = DefaultClient
	}
	if !cfg.Service.Is4() || !cfg.Client.Is4() {
		tb.Fatalf("testnet: TwoPath service address %v, client address %v: want IPv4", cfg.Service, cfg.Client)
	}
	id := newID()
	p := &TwoPath{
		A: id + "a", B: id + "b", Service: cfg.Service, Client: cfg.Client,
		DevA: [2]string{"p0", "p1"}, DevB: [2]string{"p0", "p1"}, Seed: cfg.Seed,
	}
	for i := range 2 {
		sub := newSubnet()
		p.AddrA[i] = netip.AddrFrom4([4]byte{sub[0], sub[1], sub[2], 1})
		p.AddrB[i] = netip.AddrFrom4([4]byte{sub[0], sub[1], sub[2], 2})
	}

	addNamespaces(tb, p.A, p.B)
	const seedName = "net.ipv4.fib_multipath_hash_seed"
	ctlA := append(quietNamespace[:len(quietNamespace):len(quietNamespace)],
		[2]string{"net.ipv4.fib_multipath_hash_policy", "1"},
		[2]string{seedName, strconv.FormatUint(uint64(cfg.Seed), 10)})
	if err := sysctls(p.A, ctlA, append(quietOptional, seedName)...); err != nil {
		tb.Fatal(err)
	}
	if err := sysctls(p.B, quietNamespace, quietOptional...); err != nil {
		tb.Fatal(err)
	}
	got, err := runCmd("", "ip", "netns", "exec", p.A, "cat", "/proc/sys/net/ipv4/fib_multipath_hash_seed")
	p.SeedFixed = err == nil && strings.TrimSpace(string(got)) == strconv.FormatUint(uint64(cfg.Seed), 10)
	if !p.SeedFixed {
		tb.Logf("testnet: this kernel has no %s: the port-to-path map is random per TwoPath", seedName)
	}

	var la, lb []string
	for i := range 2 {
		la = append(la, fmt.Sprintf("link add %s type veth peer name %s netns %s", p.DevA[i], p.DevB[i], p.B))
		lb = append(lb,
			fmt.Sprintf("addr add %s/24 dev %s", p.AddrB[i], p.DevB[i]),
			fmt.Sprintf("link set %s up", p.DevB[i]))
	}
	lb = append(lb, "link set lo up", fmt.Sprintf("addr add %s/32 dev lo", p.Service))
	for i := range 2 {
		la = append(la,
			fmt.Sprintf("addr add %s/24 dev %s", p.AddrA[i], p.DevA[i]),
			fmt.Sprintf("link set %s up", p.DevA[i]))
	}
	la = append(la, "link set lo up", fmt.Sprintf("addr add %s/32 dev lo", p.Client), fmt.Sprintf(
		"route add %s/32 nexthop via %s dev %s weight 1 nexthop via %s dev %s weight 1",
		p.Service, p.AddrB[0], p.DevA[0], p.AddrB[1], p.DevA[1]))
	// B's side first, so A's links have carrier when the route goes in.
	if err := batch("ip", p.A, la[:2]); err != nil {
		tb.Fatalf("testnet: %v", err)
	}
	if err := batch("ip", p.B, lb); err != nil {
		tb.Fatalf("testnet: %v", err)
	}
	if err := batch("ip", p.A, la[2:]); err != nil {
		tb.Fatalf("testnet: %v", err)
	}
	// B reaches A's host address over both links (hashed on the addresses
	// only: B keeps the default policy, so all replies to it take one).
	err = batch("ip", p.B, []string{fmt.Sprintf("route add %s/32 nexthop via %s dev %s weight 1 nexthop via %s dev %s weight 1",
		p.Client, p.AddrA[0], p.DevB[0], p.AddrA[1], p.DevB[1])})
	if err != nil {
		tb.Fatalf("testnet: %v", err)
	}
	return p
}

// PathQdisc is the root qdisc of A's device on the path: where ShapePath
// acts.
func (p *TwoPath) PathQdisc(path int) Qdisc { return Qdisc{p.A, p.DevA[path]} }

// ShapePath shapes the path from A toward B (A's egress device on it); a
// zero Rate removes the shaping.
func (p *TwoPath) ShapePath(tb TB, path int, sh Shape) {
	tb.Helper()
	if err := sh.apply(p.A, p.DevA[path]); err != nil {
		tb.Fatal(err)
	}
}

// LinkCounters are a device's transmit counters.
type LinkCounters struct{ TxPackets, TxBytes uint64 }

// Counters reads the transmit counters of A's device on each path, from
// /sys/class/net/<dev>/statistics as seen in A. Packets the shaper dropped
// are not counted; ARP is.
func (p *TwoPath) Counters(tb TB) [2]LinkCounters {
	tb.Helper()
	var files []string
	for _, d := range p.DevA {
		files = append(files, "/sys/class/net/"+d+"/statistics/tx_packets", "/sys/class/net/"+d+"/statistics/tx_bytes")
	}
	out, err := runCmd("", append([]string{"ip", "netns", "exec", p.A, "cat"}, files...)...)
	if err != nil {
		tb.Fatalf("testnet: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 4 {
		tb.Fatalf("testnet: counters: %q", out)
	}
	var v [4]uint64
	for i := range v {
		v[i], _ = strconv.ParseUint(f[i], 10, 64)
	}
	return [2]LinkCounters{{v[0], v[1]}, {v[2], v[3]}}
}

// PathOf predicts the path of UDP datagrams from A's srcPort (socket bound
// to the unspecified address) to Service:dstPort, by asking A's kernel:
// "ip route get <Service> ipproto udp sport <srcPort> dport <dstPort>".
func (p *TwoPath) PathOf(srcPort, dstPort uint16) (int, error) {
	paths, err := p.PathsOf(dstPort, srcPort)
	if err != nil {
		return -1, err
	}
	return paths[0], nil
}

// PathsOf is PathOf for many source ports, with one ip process.
func (p *TwoPath) PathsOf(dstPort uint16, srcPorts ...uint16) ([]int, error) {
	return p.pathsOf("udp", netip.Addr{}, dstPort, srcPorts)
}

// ClientPathsOf is PathsOf for sockets bound to Client: "ip route get
// <Service> from <Client> ipproto udp sport <srcPort> dport <dstPort>".
func (p *TwoPath) ClientPathsOf(dstPort uint16, srcPorts ...uint16) ([]int, error) {
	return p.pathsOf("udp", p.Client, dstPort, srcPorts)
}

// TCPPathsOf is PathsOf for TCP connections from A's srcPorts (sockets
// bound to the unspecified address) to Service:dstPort: the hash covers the
// protocol too, so a port's TCP and UDP flows may take different paths.
func (p *TwoPath) TCPPathsOf(dstPort uint16, srcPorts ...uint16) ([]int, error) {
	return p.pathsOf("tcp", netip.Addr{}, dstPort, srcPorts)
}

// pathsOf asks A's kernel for the route of each flow; from is the
// socket's bound address, or the zero Addr for the unspecified one.
func (p *TwoPath) pathsOf(proto string, from netip.Addr, dstPort uint16, srcPorts []uint16) ([]int, error) {
	src := ""
	if from.IsValid() {
		src = " from " + from.String()
	}
	lines := make([]string, len(srcPorts))
	for i, sp := range srcPorts {
		lines[i] = fmt.Sprintf("route get %s%s ipproto %s sport %d dport %d", p.Service, src, proto, sp, dstPort)
	}
	out, err := runCmd(strings.Join(lines, "\n")+"\n", "ip", "-n", p.A, "-j", "-batch", "-")
	if err != nil {
		return nil, fmt.Errorf("testnet: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	paths := make([]int, 0, len(srcPorts))
	for {
		var routes []struct{ Dev string }
		err := dec.Decode(&routes)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("testnet: ip route get: %w: %s", err, out)
		}
		if len(routes) != 1 {
			return nil, fmt.Errorf("testnet: ip route get: %d routes: %s", len(routes), out)
		}
		path := -1
		for i, d := range p.DevA {
			if routes[0].Dev == d {
				path = i
			}
		}
		if path < 0 {
			return nil, fmt.Errorf("testnet: ip route get: route via %q, not a path device", routes[0].Dev)
		}
		paths = append(paths, path)
	}
	if len(paths) != len(srcPorts) {
		return nil, fmt.Errorf("testnet: ip route get: %d answers to %d questions: %s", len(paths), len(srcPorts), out)
	}
	return paths, nil
}

// SpreadPortsFrom is where SpreadPorts starts looking.
const SpreadPortsFrom = 20000

// SpreadPorts finds k source ports whose flows to Service:dstPort alternate
// between the paths: ports[i] takes path i%2 (so for k = 2, one port per
// path). It uses PathOf; ports are from SpreadPortsFrom up.
func (p *TwoPath) SpreadPorts(tb TB, k int, dstPort uint16) []uint16 {
	tb.Helper()
	var byPath [2][]uint16
	want := [2]int{(k + 1) / 2, k / 2}
	for base := SpreadPortsFrom; len(byPath[0]) < want[0] || len(byPath[1]) < want[1]; base += 64 {
		if base+64 > 65535 {
			tb.Fatalf("testnet: SpreadPorts: not enough ports for %d flows (have %d and %d)", k, len(byPath[0]), len(byPath[1]))
		}
		cand := make([]uint16, 64)
		for i := range cand {
			cand[i] = uint16(base + i)
		}
		paths, err := p.PathsOf(dstPort, cand...)
		if err != nil {
			tb.Fatal(err)
		}
		for i, path := range paths {
			if len(byPath[path]) < want[path] {
				byPath[path] = append(byPath[path], cand[i])
			}
		}
	}
	ports := make([]uint16, k)
	for i := range ports {
		ports[i] = byPath[i%2][i/2]
	}
	return ports
}

// ProbePath measures the path of datagrams from A's srcPort (bound to the
// unspecified address) to Service:dstPort: it sends a burst and reads which
// device's counter moved. Nothing else may be sending from A meanwhile.
// It opens a sink on Service:dstPort in B if that port is free.
func (p *TwoPath) ProbePath(tb TB, srcPort, dstPort uint16) int {
	tb.Helper()
	const n = 64
	var sink, c *net.UDPConn
	In(p.B, func() (err error) {
		sink, err = net.ListenUDP("udp4", &net.UDPAddr{IP: p.Service.AsSlice(), Port: int(dstPort)})
		return err
	})
	if sink != nil {
		defer sink.Close()
	}
	err := In(p.A, func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{Port: int(srcPort)})
		return err
	})
	if err != nil {
		tb.Fatalf("testnet: probe socket on port %d in %s: %v", srcPort, p.A, err)
	}
	defer c.Close()
	dst := net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Service, dstPort))
	before := p.Counters(tb)
	sent := 0
	for range n {
		if _, err := c.WriteToUDP([]byte("testnet probe"), dst); err == nil {
			sent++
		}
	}
	var after [2]LinkCounters
	for try := 0; ; try++ {
		after = p.Counters(tb)
		d0 := after[0].TxPackets - before[0].TxPackets
		d1 := after[1].TxPackets - before[1].TxPackets
		switch {
		case d0 >= uint64(sent) && d1 < uint64(sent)/2:
			return 0
		case d1 >= uint64(sent) && d0 < uint64(sent)/2:
			return 1
		case try == 20:
			tb.Fatalf("testnet: probe from port %d: %d sent, %d out of path 0 and %d out of path 1", srcPort, sent, d0, d1)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
