//go:build linux

package xdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// hcase is one hand-made frame a hostile sender puts on the link.
type hcase struct {
	name  string
	frame []byte
}

// fixUDP4 recomputes the UDP checksum of an IPv4 frame (IHL taken from
// the header, UDP length from the UDP header), as a sender that means it
// would: the kernel then judges the frame on everything else.
func fixUDP4(f []byte) {
	ihl := int(f[14]&0x0f) * 4
	u := f[14+ihl:]
	ulen := int(binary.BigEndian.Uint16(u[4:]))
	if ulen < 8 || ulen > len(u) {
		return
	}
	u[6], u[7] = 0, 0
	c := checksum(u[:ulen], sum(f[14+12:14+20], 17+uint64(ulen)))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
}

// hostileV4 builds the IPv4 frames: each carries a tag naming its case
// at the start of its UDP payload.
func hostileV4(macB, macA [6]byte, from, to netip.AddrPort, phase int) []hcase {
	var cs []hcase
	add := func(name string, f []byte) { cs = append(cs, hcase{name, f}) }
	base := func(name string) []byte {
		pl := []byte(fmt.Sprintf("tag:%s:payload-%s", name, strings.Repeat("x", 40)))
		return v4frame(macB, macA, from, to, pl)
	}
	setSrc := func(f []byte, ip string) {
		a := netip.MustParseAddr(ip).As4()
		copy(f[26:30], a[:])
		fixIPv4(f)
		fixUDP4(f)
	}
	add("valid", base("valid"))
	f := base("ihl4")
	f[14] = 0x44
	fixIPv4(f)
	add("ihl4", f)
	// IHL 6: four NOP option bytes inserted after the fixed header.
	f = base("options")
	g := slices.Concat(f[:34], []byte{1, 1, 1, 1}, f[34:])
	g[14] = 0x46
	binary.BigEndian.PutUint16(g[16:], binary.BigEndian.Uint16(g[16:])+4)
	fixIPv4(g)
	add("options", g)
	f = base("totallong")
	binary.BigEndian.PutUint16(f[16:], binary.BigEndian.Uint16(f[16:])+100)
	fixIPv4(f)
	add("totallong", f)
	f = base("totalshort")
	binary.BigEndian.PutUint16(f[16:], binary.BigEndian.Uint16(f[16:])-10)
	fixIPv4(f)
	add("totalshort", f)
	f = base("ulenshort") // UDP length covers only the tag's first 13 bytes
	binary.BigEndian.PutUint16(f[38:], 8+13)
	fixUDP4(f)
	add("ulenshort", f)
	f = base("ulen4")
	binary.BigEndian.PutUint16(f[38:], 4)
	add("ulen4", f)
	f = base("ulenlong")
	binary.BigEndian.PutUint16(f[38:], binary.BigEndian.Uint16(f[38:])+50)
	add("ulenlong", f)
	// A datagram of 2000 bytes in two fragments (IDs per phase: the
	// kernel keeps a lone fragment for 30 s).
	{
		pl := slices.Concat([]byte("tag:frags:"), bytes.Repeat([]byte{'f'}, 1990))
		whole := v4frame(macB, macA, from, to, pl) // the UDP header and payload, unfragmented
		udpPart := whole[34:]
		id := uint16(0x4000 + phase)
		for off := 0; off < len(udpPart); off += 1480 {
			end := min(off+1480, len(udpPart))
			fr := slices.Concat(whole[:34], udpPart[off:end])
			binary.BigEndian.PutUint16(fr[16:], uint16(20+end-off))
			binary.BigEndian.PutUint16(fr[18:], id)
			fl := uint16(off / 8)
			if end < len(udpPart) {
				fl |= 0x2000
			}
			binary.BigEndian.PutUint16(fr[20:], fl)
			fixIPv4(fr)
			add("frags", fr)
		}
	}
	f = base("lonefrag")
	binary.BigEndian.PutUint16(f[18:], uint16(0x5000+phase))
	binary.BigEndian.PutUint16(f[20:], 0x2000)
	fixIPv4(f)
	add("lonefrag", f)
	for _, vid := range []uint16{5, 0} {
		f = base(fmt.Sprintf("vlan%d", vid))
		tag := []byte{0x81, 0x00, byte(vid >> 8), byte(vid)}
		add(fmt.Sprintf("vlan%d", vid), slices.Concat(f[:12], tag, f[12:]))
	}
	add("cut30", base("cut30")[:30])
	f = base("cutpayload")
	add("cutpayload", f[:len(f)-20])
	f = base("otherip")
	copy(f[30:34], []byte{to.Addr().As4()[0], to.Addr().As4()[1], to.Addr().As4()[2], 99})
	fixIPv4(f)
	fixUDP4(f)
	add("otherip", f)
	f = base("badipsum")
	f[24] ^= 0xff
	add("badipsum", f)
	f = base("badudpsum")
	f[len(f)-1] ^= 0xff // the payload changed after the checksum: a corrupted datagram
	add("badudpsum", f)
	f = base("foreignmac")
	copy(f[0:6], []byte{0x02, 0, 0xde, 0xad, 0xbe, 0xef})
	add("foreignmac", f)
	f = base("bcastmac")
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	add("bcastmac", f)
	for _, src := range []string{"127.0.0.1", "224.0.0.5", "255.255.255.255", "0.0.0.0", to.Addr().String()} {
		name := "src=" + src
		f = base(name)
		setSrc(f, src)
		add(name, f)
	}
	f = base("udpsum0")
	f[40], f[41] = 0, 0
	add("udpsum0", f)
	f = base("evilbit")
	f[20] |= 0x80
	fixIPv4(f)
	add("evilbit", f)
	f = base("srcport0")
	f[34], f[35] = 0, 0
	fixUDP4(f)
	add("srcport0", f)
	f = base("padded")
	add("padded", slices.Concat(f, []byte("TRAILING-GARBAGE")))
	f = base("version6")
	f[14] = 0x65
	fixIPv4(f)
	add("version6", f)
	return cs
}

// tagOf is the case a delivered datagram names.
func tagOf(d []byte) string {
	s, ok := strings.CutPrefix(string(d), "tag:")
	if !ok {
		return "?" + fmt.Sprintf("%.20q", d)
	}
	name, _, _ := strings.Cut(s, ":")
	return name
}

// TestReviewHostileFramesV4 (promises 3 and 4, and "a hostile sender must
// never crash it or deliver garbage"): a sender on the link (an AF_PACKET
// socket in namespace B) puts hand-made frames aimed at the AF_XDP
// transport's IP and port on the wire: IHL < 5, options, total length
// past the frame and short of it, UDP length short, long and < 8,
// fragments (a whole datagram and a lone one), VLAN tags (VID 5 and 0),
// truncated frames, the right port on another IP, bad IP and UDP
// checksums, a foreign and the broadcast destination MAC, martian
// sources (loopback, multicast, broadcast, 0.0.0.0, the receiver's own
// IP), a zero UDP checksum, the reserved IP flag, source port 0, Ethernet
// padding, a wrong IP version. The same frames then go to a kernel UDP
// socket on the same address (the transport closed): a plain-UDP
// transport, the reference. What each delivers, and the bytes, must be
// the same.
func TestReviewHostileFramesV4(t *testing.T) {
	p := newVethPair(t)
	macA, macB := macOf(t, p.A, p.ifname), macOf(t, p.B, p.ifname)
	raw := openRaw(t, p.B, p.ifname)
	from := netip.AddrPortFrom(p.AddrB, 5555)

	deliver := func(tr transport.Transport, phase int) map[string][]rdgram {
		for _, c := range hostileV4(macB, macA, from, tr.LocalAddr(), phase) {
			raw.send(t, c.frame)
		}
		got := map[string][]rdgram{}
		for _, d := range rdrain(t, tr, 700*time.Millisecond) {
			got[tagOf(d.data)] = append(got[tagOf(d.data)], d)
		}
		return got
	}
	x := listenXDP(t, p, p.A, p.AddrA, Options{})
	local := x.LocalAddr()
	gotX := deliver(x, 1)
	stats := x.Stats()
	x.Close()
	var k transport.Transport
	in(t, p.A, func() (err error) {
		k, err = udp.Listen(local.String(), udp.Options{Network: "udp4"})
		return err
	})
	defer k.Close()
	gotK := deliver(k, 2)
	t.Logf("AF_XDP delivered %d cases, kernel UDP %d; XDP stats %+v", len(gotX), len(gotK), stats)
	if len(gotX["valid"]) != 1 || len(gotK["valid"]) != 1 {
		t.Fatalf("the valid frame: %d from AF_XDP, %d from kernel UDP", len(gotX["valid"]), len(gotK["valid"]))
	}
	var names []string
	for _, c := range hostileV4(macB, macA, from, local, 0) {
		if !slices.Contains(names, c.name) {
			names = append(names, c.name)
		}
	}
	for n := range gotX {
		if !slices.Contains(names, n) {
			t.Errorf("AF_XDP delivered a datagram of no case: %s", n)
		}
	}
	for _, n := range names {
		x, k := gotX[n], gotK[n]
		switch {
		case len(x) != len(k):
			t.Errorf("%-16s AF_XDP delivered %d, kernel UDP %d", n, len(x), len(k))
		case len(x) == 1 && (!bytes.Equal(x[0].data, k[0].data) || x[0].from != k[0].from):
			t.Errorf("%-16s AF_XDP delivered %d bytes from %v, kernel UDP %d bytes from %v", n, len(x[0].data), x[0].from, len(k[0].data), k[0].from)
		default:
			t.Logf("%-16s both delivered %d", n, len(x))
		}
	}
}
