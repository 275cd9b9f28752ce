//go:build linux

package xdp

import (
	"net/netip"
	"os/exec"
	"testing"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/transporttest"
	"github.com/erpc-go/erpc/transport/udp"
)

// addIPv6 gives both ends of the pair an IPv6 address (no duplicate
// address detection, so they are usable at once) and returns them.
func addIPv6(t *testing.T, p vethPair) (a, b netip.Addr) {
	t.Helper()
	a, b = netip.MustParseAddr("fd00:e:1::1"), netip.MustParseAddr("fd00:e:1::2")
	for _, h := range []struct {
		ns   string
		addr netip.Addr
	}{{p.A, a}, {p.B, b}} {
		out, err := exec.Command("ip", "-n", h.ns, "-6", "addr", "add", h.addr.String()+"/64", "dev", p.ifname, "nodad").CombinedOutput()
		if err != nil {
			t.Fatalf("ip addr add %v: %v: %s", h.addr, err, out)
		}
	}
	return a, b
}

// TestConformanceIPv6: transporttest over IPv6 on the veth pair, AF_XDP
// at one end and kernel UDP at the other, both ways: the program matches
// the IPv6 destination, frames carry IPv6 headers with the mandatory UDP
// checksum (the kernel end checks it), and the peer's MAC comes from the
// kernel's NDP.
func TestConformanceIPv6(t *testing.T) {
	for _, c := range []struct {
		name string
		xdpA bool
	}{{"xdp-udp", true}, {"udp-xdp", false}} {
		t.Run(c.name, func(t *testing.T) {
			p := newVethPair(t)
			a6, b6 := addIPv6(t, p)
			transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
				var trs []transport.Transport
				if c.xdpA {
					trs = append(trs, listenXDP(t, p, p.A, a6, Options{}))
				} else {
					trs = append(trs, listenUDP6(t, p.A, a6))
				}
				for i := 1; i < n; i++ {
					if i == 1 && !c.xdpA {
						trs = append(trs, listenXDP(t, p, p.B, b6, Options{}))
					} else {
						trs = append(trs, listenUDP6(t, p.B, b6))
					}
				}
				return trs
			})
		})
	}
}

func listenUDP6(t testing.TB, ns string, addr netip.Addr) transport.Transport {
	t.Helper()
	var tr *udp.Transport
	in(t, ns, func() (err error) {
		tr, err = udp.Listen(netip.AddrPortFrom(addr, 0).String(), udp.Options{Network: "udp6"})
		return err
	})
	t.Cleanup(func() { tr.Close() })
	return tr
}
