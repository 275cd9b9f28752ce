//go:build linux

package xdp

import (
	"errors"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/internal/testnet"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/transporttest"
	"github.com/erpc-go/erpc/transport/udp"
)

// vethPair is a pair of namespaces joined by veth (internal/testnet),
// with the interface's name, which is the same on both sides. It skips
// the test without root, namespaces or iproute2, and is deleted when
// the test ends, failed or not.
type vethPair struct {
	*testnet.Pair
	ifname string
}

func newVethPair(t *testing.T) vethPair {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("xdp: nft not installed; internal/testnet needs it (apt-get install nftables)")
	}
	p := testnet.NewPair(t)
	return vethPair{p, "veth-" + strings.TrimSuffix(p.A, "a")}
}

// in runs fn on a thread inside namespace ns.
func in(t testing.TB, ns string, fn func() error) {
	t.Helper()
	if err := testnet.In(ns, fn); err != nil {
		t.Fatal(err)
	}
}

// listenXDP opens an AF_XDP transport in namespace ns on addr (port 0)
// and closes it when the test ends.
func listenXDP(t testing.TB, p vethPair, ns string, addr netip.Addr, opts Options) *Transport {
	t.Helper()
	var tr transport.Transport
	in(t, ns, func() (err error) {
		tr, err = Listen(p.ifname, netip.AddrPortFrom(addr, 0), opts)
		return err
	})
	x, ok := tr.(*Transport)
	if !ok {
		tr.Close()
		t.Fatalf("Listen returned a %T", tr)
	}
	t.Cleanup(func() {
		ks, _ := x.KernelStats()
		t.Logf("%s %v: %+v, kernel: %+v", ns, x.LocalAddr(), x.Stats(), ks)
		x.Close()
	})
	return x
}

// listenUDP opens a kernel UDP transport in namespace ns.
func listenUDP(t testing.TB, ns string, addr netip.Addr) transport.Transport {
	t.Helper()
	var tr *udp.Transport
	in(t, ns, func() (err error) {
		tr, err = udp.Listen(netip.AddrPortFrom(addr, 0).String(), udp.Options{Network: "udp4"})
		return err
	})
	t.Cleanup(func() { tr.Close() })
	return tr
}

// TestConformance runs transporttest over a veth pair with AF_XDP at one
// end and kernel UDP at the other, both ways, and at both ends: on the
// wire it is plain UDP. The first transport lives in namespace A, the
// rest in B (further ones are kernel UDP sockets: one XDP program per
// interface).
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		name       string
		xdpA, xdpB bool
		attachMode string
	}{{"xdp-udp", true, false, ""}, {"udp-xdp", false, true, ""}, {"xdp-xdp", true, true, ""},
		{"generic-xdp-xdp", true, true, "generic"}} {
		t.Run(c.name, func(t *testing.T) {
			p := newVethPair(t)
			transporttest.Run(t, func(t *testing.T, n int) []transport.Transport {
				var trs []transport.Transport
				if c.xdpA {
					x := listenXDP(t, p, p.A, p.AddrA, Options{AttachMode: c.attachMode})
					if want := c.attachMode + "/copy"; c.attachMode != "" && x.Mode() != want {
						t.Fatalf("mode %s, want %s", x.Mode(), want)
					}
					t.Logf("A: AF_XDP %v, mode %s", x.LocalAddr(), x.Mode())
					trs = append(trs, x)
				} else {
					trs = append(trs, listenUDP(t, p.A, p.AddrA))
				}
				for i := 1; i < n; i++ {
					if i == 1 && c.xdpB {
						trs = append(trs, listenXDP(t, p, p.B, p.AddrB, Options{AttachMode: c.attachMode}))
					} else {
						trs = append(trs, listenUDP(t, p.B, p.AddrB))
					}
				}
				return trs
			})
		})
	}
}

// TestListenErrors: no such interface and an address the interface does
// not have fail with ErrNoInterface, native mode on loopback (which has
// no driver XDP) with ErrNotAttachable; FallbackUDP then gives a UDP
// transport instead.
func TestListenErrors(t *testing.T) {
	p := newVethPair(t)
	in(t, p.A, func() error {
		_, err := Listen("nosuch0", netip.MustParseAddrPort("10.1.2.3:0"), Options{})
		if !errors.Is(err, ErrNoInterface) {
			t.Errorf("no such interface: %v, want ErrNoInterface", err)
		}
		_, err = Listen(p.ifname, netip.MustParseAddrPort("192.0.2.7:0"), Options{})
		if !errors.Is(err, ErrNoInterface) {
			t.Errorf("address not on the interface: %v, want ErrNoInterface", err)
		}
		_, err = Listen("lo", netip.MustParseAddrPort("127.0.0.1:0"), Options{AttachMode: "native"})
		if !errors.Is(err, ErrNotAttachable) {
			t.Errorf("native mode on lo: %v, want ErrNotAttachable", err)
		}
		t.Logf("native mode on lo: %v", err)
		tr, err := Listen("nosuch0", netip.AddrPortFrom(p.AddrA, 0), Options{FallbackUDP: true})
		if err != nil {
			t.Fatalf("FallbackUDP: %v", err)
		}
		defer tr.Close()
		if _, ok := tr.(*udp.Transport); !ok {
			t.Errorf("FallbackUDP gave a %T, want *udp.Transport", tr)
		}
		return nil
	})
}
