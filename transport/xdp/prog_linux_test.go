//go:build linux

package xdp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

const xdpDrop = 1 // the tests' fallback: a redirect to an empty map slot

// wantRedirect is the program's rule in Go: a UDP datagram to addr in an
// untagged frame to mac, IPv4 without options and unfragmented or IPv6
// without extension headers, from a source that is not martian, with a
// UDP checksum field that is not the pseudo-header's sum alone.
func wantRedirect(f []byte, mac [6]byte, addr netip.AddrPort) bool {
	if addr.Addr().Is4() {
		ip := addr.Addr().As4()
		ok := len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && f[14] == 0x45 && f[23] == 17 &&
			binary.BigEndian.Uint16(f[20:])&0x3fff == 0 && bytes.Equal(f[30:34], ip[:]) &&
			binary.BigEndian.Uint16(f[36:]) == addr.Port()
		if !ok || !bytes.Equal(f[0:6], mac[:]) || f[26] == 0 || f[26] == 127 || f[26] >= 224 || bytes.Equal(f[26:30], ip[:]) {
			return false
		}
		return binary.BigEndian.Uint16(f[40:]) != pseudoSum(f[26:34], f[38:40])
	}
	ip := addr.Addr().As16()
	ok := len(f) >= 62 && binary.BigEndian.Uint16(f[12:]) == 0x86dd && f[20] == 17 &&
		bytes.Equal(f[38:54], ip[:]) && binary.BigEndian.Uint16(f[56:]) == addr.Port()
	if !ok || !bytes.Equal(f[0:6], mac[:]) || f[22] == 0xff || bytes.Equal(f[22:38], ip[:]) {
		return false
	}
	src := netip.AddrFrom16([16]byte(f[22:38]))
	if src.IsUnspecified() || src.IsLoopback() {
		return false
	}
	return binary.BigEndian.Uint16(f[60:]) != pseudoSum(f[22:54], f[58:60])
}

// pseudoSum is the folded ones'-complement sum of a UDP pseudo header:
// addresses, protocol 17 and length (2 bytes, big-endian).
func pseudoSum(addrs, ulen []byte) uint16 {
	s := uint32(17) + uint32(binary.BigEndian.Uint16(ulen))
	for i := 0; i < len(addrs); i += 2 {
		s += uint32(binary.BigEndian.Uint16(addrs[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestProgramVerdicts loads the XDP program (generic mode's, which also
// passes partial checksums) for an IPv4 and an IPv6
// address (the verifier accepts both) and runs it (BPF_PROG_TEST_RUN) on
// frames to that address, truncated at every length and with random
// bytes changed (seeded, 3000 per family): its verdict, redirect or pass,
// is the Go model's every time, and both verdicts occur.
func TestProgramVerdicts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("xdp: loading an XDP program needs root")
	}
	for _, local := range []string{"10.9.8.7:31850", "[fd00::7]:31850"} {
		addr := netip.MustParseAddrPort(local)
		t.Run(addr.Addr().String(), func(t *testing.T) {
			a, err := load(1, testMACs.dst, addr, true, xdpDrop)
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			peer := netip.MustParseAddrPort("10.9.8.1:5000")
			if addr.Addr().Is6() {
				peer = netip.MustParseAddrPort("[fd00::1]:5000")
			}
			buf := make([]byte, 256)
			n := buildFrame(buf, testMACs, peer, addr, []byte("hello"), nil)
			valid := buf[:n]
			r := rand.New(rand.NewPCG(3, 4))
			counts := [2]int{}
			check := func(f []byte) {
				ret, err := a.prog.Run(&ebpf.RunOptions{Data: f})
				if err != nil {
					t.Fatalf("test run of %d bytes: %v", len(f), err)
				}
				want := uint32(xdpPass)
				if wantRedirect(f, testMACs.dst, addr) {
					want = xdpDrop
				}
				if ret != want {
					t.Fatalf("frame %x: verdict %d, want %d", f, ret, want)
				}
				counts[ret-1]++
			}
			for l := ethHeader; l <= n; l++ {
				check(valid[:l])
			}
			for range 3000 {
				f := bytes.Clone(valid)
				for range 1 + r.IntN(2) {
					f[r.IntN(min(len(f), 60))] = byte(r.Uint32())
				}
				check(f)
			}
			// The frames the program leaves to the kernel on purpose: a
			// checksum left to an offload, martian sources, another MAC.
			partial := bytes.Clone(valid)
			src, sumAt, addrs, lenAt := 26, 40, partial[26:34], partial[38:40]
			if addr.Addr().Is6() {
				src, sumAt, addrs, lenAt = 22, 60, partial[22:54], partial[58:60]
			}
			binary.BigEndian.PutUint16(partial[sumAt:], pseudoSum(addrs, lenAt))
			passes := counts[1]
			check(partial)
			for _, m := range []string{"127.0.0.1", "224.0.0.5", "0.0.0.0", "::1", "::", "ff02::1", addr.Addr().String()} {
				ma := netip.MustParseAddr(m)
				if ma.Is4() != addr.Addr().Is4() {
					continue
				}
				f := bytes.Clone(valid)
				copy(f[src:], ma.AsSlice())
				check(f)
			}
			other := bytes.Clone(valid)
			other[0] ^= 1
			check(other)
			if counts[1]-passes < 5 {
				t.Fatalf("only %d of the frames left to the kernel on purpose were passed", counts[1]-passes)
			}
			if counts[0] == 0 || counts[1] == 0 {
				t.Fatalf("verdicts: %d redirects, %d passes: both should occur", counts[0], counts[1])
			}
			t.Logf("%d redirects, %d passes", counts[0], counts[1])
		})
	}
}
