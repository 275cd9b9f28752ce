//go:build linux

package xdp

import (
	"testing"

	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/transporttest"
)

// TestReviewConformanceIPv6Both (promise 1: "either or both ends, native
// and generic mode, IPv4 and IPv6"): the package's own IPv6 conformance
// test covers AF_XDP at one end in native mode only; here AF_XDP is at
// both ends over IPv6, natively and in generic mode, and at one end in
// generic mode against kernel UDP.
func TestReviewConformanceIPv6Both(t *testing.T) {
	for _, c := range []struct {
		name       string
		xdpA, xdpB bool
		mode       string
	}{{"xdp-xdp", true, true, ""}, {"generic-xdp-xdp", true, true, "generic"}, {"generic-xdp-udp", true, false, "generic"}, {"generic-udp-xdp", false, true, "generic"}} {
		t.Run(c.name, func(t *testing.T) {
			p := newVethPair(t)
			a6, b6 := addIPv6(t, p)
			transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
				var trs []transport.Transport
				if c.xdpA {
					trs = append(trs, listenXDP(t, p, p.A, a6, Options{AttachMode: c.mode}))
				} else {
					trs = append(trs, listenUDP6(t, p.A, a6))
				}
				for i := 1; i < n; i++ {
					if i == 1 && c.xdpB {
						trs = append(trs, listenXDP(t, p, p.B, b6, Options{AttachMode: c.mode}))
					} else {
						trs = append(trs, listenUDP6(t, p.B, b6))
					}
				}
				return trs
			})
		})
	}
}

// TestReviewConformanceGenericUDPPeerV4: the package's TestConformance
// runs generic mode only with AF_XDP at both ends; here generic mode
// faces kernel UDP over IPv4, both ways.
func TestReviewConformanceGenericUDPPeerV4(t *testing.T) {
	for _, c := range []struct {
		name string
		xdpA bool
	}{{"generic-xdp-udp", true}, {"generic-udp-xdp", false}} {
		t.Run(c.name, func(t *testing.T) {
			p := newVethPair(t)
			transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
				var trs []transport.Transport
				if c.xdpA {
					trs = append(trs, listenXDP(t, p, p.A, p.AddrA, Options{AttachMode: "generic"}))
				} else {
					trs = append(trs, listenUDP(t, p.A, p.AddrA))
				}
				for i := 1; i < n; i++ {
					if i == 1 && !c.xdpA {
						trs = append(trs, listenXDP(t, p, p.B, p.AddrB, Options{AttachMode: "generic"}))
					} else {
						trs = append(trs, listenUDP(t, p.B, p.AddrB))
					}
				}
				return trs
			})
		})
	}
}
