package xdp

import (
	"encoding/binary"
	"net/netip"
)

// Header sizes of the frames the transport builds and parses.
const (
	ethHeader = 14
	ip4Header = 20
	ip6Header = 40
	udpHeader = 8
)

// headerLen is the bytes before the UDP payload in a frame to or from an
// address of a's family.
func headerLen(a netip.Addr) int {
	if a.Is4() {
		return ethHeader + ip4Header + udpHeader
	}
	return ethHeader + ip6Header + udpHeader
}

// parseFrame reads an Ethernet frame holding a UDP datagram over IPv4 or
// IPv6 and returns its source, destination and payload (a slice of
// frame). ok is false for anything else and for a malformed frame: a
// length that points past the frame, an IPv4 header whose checksum is
// wrong, a fragment, a wrong UDP checksum (or none over IPv6).
func parseFrame(frame []byte) (from, to netip.AddrPort, payload []byte, ok bool) {
	if len(frame) < ethHeader {
		return from, to, nil, false
	}
	ip := frame[ethHeader:]
	var udp []byte
	var src, dst netip.Addr
	var addrs []byte // source and destination, for the UDP pseudo header
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800:
		if len(ip) < ip4Header || ip[0]>>4 != 4 {
			return from, to, nil, false
		}
		ihl := int(ip[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if ihl < ip4Header || total < ihl || total > len(ip) || ip[9] != 17 ||
			binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 || checksum(ip[:ihl], 0) != 0 {
			return from, to, nil, false
		}
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		udp, addrs = ip[ihl:total], ip[12:20]
	case 0x86dd:
		if len(ip) < ip6Header || ip[0]>>4 != 6 || ip[6] != 17 {
			return from, to, nil, false
		}
		plen := int(binary.BigEndian.Uint16(ip[4:]))
		if ip6Header+plen > len(ip) {
			return from, to, nil, false
		}
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		udp, addrs = ip[ip6Header:ip6Header+plen], ip[8:40]
	default:
		return from, to, nil, false
	}
	if len(udp) < udpHeader {
		return from, to, nil, false
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < udpHeader || ulen > len(udp) {
		return from, to, nil, false
	}
	// The UDP checksum, as the kernel checks it: optional over IPv4 (0 is
	// none), mandatory over IPv6. A field that holds the pseudo header's
	// sum alone is a checksum left to an offload (a kernel sender over
	// veth, CHECKSUM_PARTIAL, which its kernel trusts): taken as it is.
	if c := binary.BigEndian.Uint16(udp[6:]); c != 0 || src.Is6() {
		pseudo := sum(addrs, 17+uint64(ulen))
		if c == 0 || c != ^checksum(nil, pseudo) && checksum(udp[:ulen], pseudo) != 0 {
			return from, to, nil, false
		}
	}
	from = netip.AddrPortFrom(src, binary.BigEndian.Uint16(udp[0:]))
	to = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(udp[2:]))
	return from, to, udp[udpHeader:ulen], true
}

// macs is the Ethernet addresses of one frame.
type macs struct{ src, dst [6]byte }

// buildFrame writes the frame carrying head and payload from src to to
// into dst, which holds at least headerLen(to.Addr()) + len(head) +
// len(payload) bytes, and returns its length. src and to are of one
// family. The IPv4 header checksum and the UDP checksum are computed (the
// UDP one is mandatory over IPv6, and a receiving kernel checks it).
func buildFrame(dst []byte, l macs, src, to netip.AddrPort, head, payload []byte) int {
	copy(dst[0:6], l.dst[:])
	copy(dst[6:12], l.src[:])
	ulen := udpHeader + len(head) + len(payload)
	var udp []byte
	var pseudo uint64
	if to.Addr().Is4() {
		binary.BigEndian.PutUint16(dst[12:], 0x0800)
		ip := dst[ethHeader : ethHeader+ip4Header]
		ip[0], ip[1] = 0x45, 0
		binary.BigEndian.PutUint16(ip[2:], uint16(ip4Header+ulen))
		binary.BigEndian.PutUint32(ip[4:], 0x4000) // id 0, don't fragment
		ip[8], ip[9] = 64, 17
		ip[10], ip[11] = 0, 0
		s, d := src.Addr().As4(), to.Addr().As4()
		copy(ip[12:16], s[:])
		copy(ip[16:20], d[:])
		binary.BigEndian.PutUint16(ip[10:], checksum(ip, 0))
		pseudo = sum(ip[12:20], 17+uint64(ulen))
		udp = dst[ethHeader+ip4Header:]
	} else {
		binary.BigEndian.PutUint16(dst[12:], 0x86dd)
		ip := dst[ethHeader : ethHeader+ip6Header]
		binary.BigEndian.PutUint32(ip[0:], 6<<28)
		binary.BigEndian.PutUint16(ip[4:], uint16(ulen))
		ip[6], ip[7] = 17, 64
		s, d := src.Addr().As16(), to.Addr().As16()
		copy(ip[8:24], s[:])
		copy(ip[24:40], d[:])
		pseudo = sum(ip[8:40], 17+uint64(ulen))
		udp = dst[ethHeader+ip6Header:]
	}
	binary.BigEndian.PutUint16(udp[0:], src.Port())
	binary.BigEndian.PutUint16(udp[2:], to.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(ulen))
	udp[6], udp[7] = 0, 0
	n := copy(udp[udpHeader:], head)
	copy(udp[udpHeader+n:], payload)
	c := checksum(udp[:ulen], pseudo)
	if c == 0 {
		c = 0xffff // zero means "no checksum" in UDP
	}
	binary.BigEndian.PutUint16(udp[6:], c)
	return len(dst) - len(udp) + ulen
}

// sum adds b as big-endian 16-bit words (a last odd byte padded with
// zero) to acc, four bytes at a time, without folding.
func sum(b []byte, acc uint64) uint64 {
	for len(b) >= 8 {
		acc += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	if len(b) >= 4 {
		acc += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// checksum is the Internet checksum of b and acc: the complement of
// their ones'-complement sum folded to 16 bits. Over a header that holds
// a valid checksum it is 0.
func checksum(b []byte, acc uint64) uint16 {
	acc = sum(b, acc)
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return ^uint16(acc)
}
