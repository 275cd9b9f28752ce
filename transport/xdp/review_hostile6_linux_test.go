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

// fixUDP6 recomputes the UDP checksum of an IPv6 frame whose UDP header
// starts at off.
func fixUDP6(f []byte, off int) {
	u := f[off:]
	ulen := int(binary.BigEndian.Uint16(u[4:]))
	if ulen < 8 || ulen > len(u) {
		return
	}
	u[6], u[7] = 0, 0
	c := checksum(u[:ulen], sum(f[14+8:14+40], 17+uint64(ulen)))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
}

// hostileV6 builds the IPv6 frames, tagged like hostileV4's.
func hostileV6(macB, macA [6]byte, from, to netip.AddrPort) []hcase {
	var cs []hcase
	add := func(name string, f []byte) { cs = append(cs, hcase{name, f}) }
	base := func(name string) []byte {
		pl := []byte(fmt.Sprintf("tag:%s:payload-%s", name, strings.Repeat("y", 40)))
		buf := make([]byte, headerLen(to.Addr())+len(pl))
		n := buildFrame(buf, macs{src: macB, dst: macA}, from, to, nil, pl)
		return buf[:n]
	}
	// ext inserts an 8-byte extension header of type typ before UDP.
	ext := func(name string, typ byte, body []byte) []byte {
		f := base(name)
		h := slices.Concat([]byte{17, 0}, body)
		g := slices.Concat(f[:54], h, f[54:])
		g[20] = typ
		binary.BigEndian.PutUint16(g[18:], binary.BigEndian.Uint16(g[18:])+uint16(len(h)))
		return g
	}
	add("valid", base("valid"))
	add("hopbyhop", ext("hopbyhop", 0, []byte{1, 4, 0, 0, 0, 0}))      // PadN
	add("destopts", ext("destopts", 60, []byte{1, 4, 0, 0, 0, 0}))     // PadN
	add("atomicfrag", ext("atomicfrag", 44, []byte{0, 0, 0, 0, 0, 7})) // offset 0, M 0
	f := base("plenlong")
	binary.BigEndian.PutUint16(f[18:], binary.BigEndian.Uint16(f[18:])+100)
	add("plenlong", f)
	f = base("plenshort")
	binary.BigEndian.PutUint16(f[18:], binary.BigEndian.Uint16(f[18:])-10)
	add("plenshort", f)
	f = base("plen0")
	binary.BigEndian.PutUint16(f[18:], 0)
	add("plen0", f)
	f = base("udpsum0")
	f[60], f[61] = 0, 0
	add("udpsum0", f)
	f = base("badudpsum")
	f[len(f)-1] ^= 0xff
	add("badudpsum", f)
	f = base("version4")
	f[14] = 0x40 | f[14]&0x0f
	add("version4", f)
	f = base("foreignmac")
	copy(f[0:6], []byte{0x02, 0, 0xde, 0xad, 0xbe, 0xef})
	add("foreignmac", f)
	f = base("cut50")
	add("cut50", f[:50])
	f = base("padded")
	add("padded", slices.Concat(f, []byte("TRAILING")))
	for _, src := range []string{"::1", "ff02::1", "::", to.Addr().String()} {
		name := "src=" + strings.ReplaceAll(src, ":", "_") // no colon: it ends a tag
		f = base(name)
		a := netip.MustParseAddr(src).As16()
		copy(f[22:38], a[:])
		fixUDP6(f, 54)
		add(name, f)
	}
	return cs
}

// TestReviewHostileFramesV6: TestReviewHostileFramesV4 over IPv6:
// extension headers (hop-by-hop, destination options, an atomic
// fragment), payload length past the frame, short of it and 0, a zero
// and a wrong UDP checksum (IPv6 makes it mandatory), a wrong version, a
// foreign MAC, a truncated frame, padding, and sources the kernel
// refuses (loopback, multicast, unspecified) or its own. AF_XDP must
// deliver what a kernel UDP socket on the same address delivers.
func TestReviewHostileFramesV6(t *testing.T) {
	p := newVethPair(t)
	a6, b6 := addIPv6(t, p)
	macA, macB := macOf(t, p.A, p.ifname), macOf(t, p.B, p.ifname)
	raw := openRaw(t, p.B, p.ifname)
	from := netip.AddrPortFrom(b6, 5555)
	deliver := func(tr transport.Transport) map[string][]rdgram {
		for _, c := range hostileV6(macB, macA, from, tr.LocalAddr()) {
			raw.send(t, c.frame)
		}
		got := map[string][]rdgram{}
		for _, d := range rdrain(t, tr, 700*time.Millisecond) {
			got[tagOf(d.data)] = append(got[tagOf(d.data)], d)
		}
		return got
	}
	x := listenXDP(t, p, p.A, a6, Options{})
	local := x.LocalAddr()
	gotX := deliver(x)
	stats := x.Stats()
	x.Close()
	var k transport.Transport
	in(t, p.A, func() (err error) {
		k, err = udp.Listen(local.String(), udp.Options{Network: "udp6"})
		return err
	})
	defer k.Close()
	gotK := deliver(k)
	t.Logf("AF_XDP delivered %d cases, kernel UDP %d; XDP stats %+v", len(gotX), len(gotK), stats)
	if len(gotX["valid"]) != 1 || len(gotK["valid"]) != 1 {
		t.Fatalf("the valid frame: %d from AF_XDP, %d from kernel UDP", len(gotX["valid"]), len(gotK["valid"]))
	}
	for _, c := range hostileV6(macB, macA, from, local) {
		n := c.name
		x, k := gotX[n], gotK[n]
		switch {
		case len(x) != len(k):
			t.Errorf("%-14s AF_XDP delivered %d, kernel UDP %d", n, len(x), len(k))
		case len(x) == 1 && (!bytes.Equal(x[0].data, k[0].data) || x[0].from != k[0].from):
			t.Errorf("%-14s AF_XDP delivered %d bytes from %v, kernel UDP %d bytes from %v", n, len(x[0].data), x[0].from, len(k[0].data), k[0].from)
		default:
			t.Logf("%-14s both delivered %d", n, len(x))
		}
	}
}
