package xdp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

var testMACs = macs{src: [6]byte{2, 0, 0, 0, 0, 1}, dst: [6]byte{2, 0, 0, 0, 0, 2}}

// TestFrameRoundTrip: frames built for random addresses, ports and
// payloads of both families parse back to the same datagram, and their
// checksums verify (the IPv4 header's, and the UDP one over the pseudo
// header, which a receiving kernel checks).
func TestFrameRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 2048)
	for i := range 2000 {
		var src, dst netip.Addr
		if i%2 == 0 {
			src, dst = netip.AddrFrom4([4]byte{10, 0, byte(r.IntN(256)), byte(r.IntN(256))}), netip.AddrFrom4([4]byte{10, 1, 2, byte(r.IntN(256))})
		} else {
			var a, b [16]byte
			for j := range a {
				a[j], b[j] = byte(r.IntN(256)), byte(r.IntN(256))
			}
			src, dst = netip.AddrFrom16(a), netip.AddrFrom16(b)
		}
		from := netip.AddrPortFrom(src, uint16(r.IntN(65536)))
		to := netip.AddrPortFrom(dst, uint16(r.IntN(65536)))
		head := randBytes(r, r.IntN(40))
		payload := randBytes(r, r.IntN(1400))
		n := buildFrame(buf, testMACs, from, to, head, payload)
		if want := headerLen(dst) + len(head) + len(payload); n != want {
			t.Fatalf("frame of %d bytes, want %d", n, want)
		}
		gotFrom, gotTo, data, ok := parseFrame(buf[:n])
		if !ok || gotFrom != from || gotTo != to || !bytes.Equal(data, append(head, payload...)) {
			t.Fatalf("%v -> %v, %d bytes: parsed %v -> %v, %d bytes, ok %v", from, to, len(head)+len(payload), gotFrom, gotTo, len(data), ok)
		}
		if !udpChecksumOK(buf[:n]) {
			t.Fatalf("%v -> %v: UDP checksum does not verify", from, to)
		}
	}
}

// udpChecksumOK verifies a built frame's UDP checksum over the pseudo
// header, independently of buildFrame's own pseudo-header sum.
func udpChecksumOK(frame []byte) bool {
	var pseudo []byte
	var udp []byte
	if binary.BigEndian.Uint16(frame[12:]) == 0x0800 {
		ip := frame[ethHeader:]
		udp = ip[ip4Header:]
		pseudo = append(append([]byte{}, ip[12:20]...), 0, 17)
	} else {
		ip := frame[ethHeader:]
		udp = ip[ip6Header:]
		pseudo = append(append([]byte{}, ip[8:40]...), 0, 0, 0, 17)
	}
	ulen := binary.BigEndian.Uint16(udp[4:])
	pseudo = binary.BigEndian.AppendUint16(pseudo, ulen)
	b := append(pseudo, udp[:ulen]...)
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestParseRejects: truncations of a valid frame at every length, a
// corrupted IPv4 header checksum, a fragment, another protocol and
// another EtherType are all refused.
func TestParseRejects(t *testing.T) {
	buf := make([]byte, 2048)
	from, to := netip.MustParseAddrPort("10.0.0.1:1000"), netip.MustParseAddrPort("10.0.0.2:2000")
	n := buildFrame(buf, testMACs, from, to, []byte("head"), []byte("payload"))
	frame := buf[:n]
	for l := range n {
		if _, _, _, ok := parseFrame(frame[:l]); ok {
			t.Fatalf("a frame cut to %d of %d bytes parsed", l, n)
		}
	}
	for _, c := range []struct {
		name string
		at   int
		val  byte
	}{{"IPv4 checksum", ethHeader + 10, 0x00}, {"fragment offset", ethHeader + 7, 1},
		{"protocol TCP", ethHeader + 9, 6}, {"EtherType ARP", 13, 0x06}, {"IPv4 header length 4", ethHeader, 0x44}} {
		bad := bytes.Clone(frame)
		if bad[c.at] == c.val {
			bad[c.at]++
		} else {
			bad[c.at] = c.val
		}
		if _, _, _, ok := parseFrame(bad); ok {
			t.Errorf("%s: parsed", c.name)
		}
	}
}

// FuzzParseFrame: parseFrame never panics, and what it accepts lies
// within the frame and, built again, parses to the same datagram.
func FuzzParseFrame(f *testing.F) {
	buf := make([]byte, 2048)
	for _, to := range []string{"10.0.0.2:2000", "[fd00::2]:2000"} {
		dst := netip.MustParseAddrPort(to)
		src := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), 1000)
		if dst.Addr().Is6() {
			src = netip.MustParseAddrPort("[fd00::1]:1000")
		}
		n := buildFrame(buf, testMACs, src, dst, []byte("h"), []byte("some payload"))
		f.Add(bytes.Clone(buf[:n]))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		from, to, data, ok := parseFrame(frame)
		if !ok {
			return
		}
		if len(data) > len(frame)-headerLen(to.Addr()) {
			t.Fatalf("payload of %d bytes from a frame of %d", len(data), len(frame))
		}
		if from.Addr().Is4() != to.Addr().Is4() {
			t.Fatalf("families differ: %v -> %v", from, to)
		}
		out := make([]byte, headerLen(to.Addr())+len(data))
		n := buildFrame(out, testMACs, from, to, nil, data)
		f2, t2, d2, ok := parseFrame(out[:n])
		if !ok || f2 != from || t2 != to || !bytes.Equal(d2, data) {
			t.Fatalf("rebuilt frame parsed to %v -> %v (%d bytes, ok %v)", f2, t2, len(d2), ok)
		}
	})
}
