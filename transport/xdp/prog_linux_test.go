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
// untagged frame, IPv4 without options and unfragmented or IPv6 without
// extension headers.
func wantRedirect(f []byte, addr netip.AddrPort) bool {
	if addr.Addr().Is4() {
		ip := addr.Addr().As4()
		return len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && f[14] == 0x45 && f[23] == 17 &&
			binary.BigEndian.Uint16(f[20:])&0x3fff == 0 && bytes.Equal(f[30:34], ip[:]) &&
			binary.BigEndian.Uint16(f[36:]) == addr.Port()
	}
	ip := addr.Addr().As16()
	return len(f) >= 62 && binary.BigEndian.Uint16(f[12:]) == 0x86dd && f[20] == 17 &&
		bytes.Equal(f[38:54], ip[:]) && binary.BigEndian.Uint16(f[56:]) == addr.Port()
}

// TestProgramVerdicts loads the XDP program for an IPv4 and an IPv6
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
			a, err := load(1, addr, xdpDrop)
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
				if wantRedirect(f, addr) {
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
			if counts[0] == 0 || counts[1] == 0 {
				t.Fatalf("verdicts: %d redirects, %d passes: both should occur", counts[0], counts[1])
			}
			t.Logf("%d redirects, %d passes", counts[0], counts[1])
		})
	}
}
