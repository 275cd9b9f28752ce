package erpc_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// family is a set of address families, for the dial matrix.
type family uint8

const (
	v4 family = 1 << iota
	v6
)

func familyOf(a netip.Addr) family {
	if a.Unmap().Is4() {
		return v4
	}
	return v6
}

// hasIPv6Loopback says whether this host can bind ::1.
func hasIPv6Loopback() bool {
	c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// dialForms are the target hosts of the matrix: a name, the IPv4 and
// IPv6 loopback, the IPv4 loopback IPv4-mapped, and the machine's own
// name when it resolves to loopback only.
func dialForms(t *testing.T) []string {
	forms := []string{"localhost", "127.0.0.1", "[::1]", "[::ffff:127.0.0.1]"}
	name, err := os.Hostname()
	if err != nil || name == "localhost" {
		return forms
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", name)
	if err != nil || len(ips) == 0 {
		t.Logf("the host name %q does not resolve (%v): no row for it", name, err)
		return forms
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			t.Logf("the host name %q resolves to %v, not only loopback: no row for it", name, ips)
			return forms
		}
	}
	return append(forms, name)
}

// formAddrs is what the host of a target resolves to, in order.
func formAddrs(t *testing.T, host string) []netip.Addr {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	if err != nil {
		t.Fatalf("look up %q: %v", host, err)
	}
	return ips
}

// TestDialAddressForms dials real UDP servers on loopback over the whole
// matrix: server socket (dual-stack [::], 0.0.0.0 which Go also opens
// dual-stack, 127.0.0.1, ::1) x client socket (erpc.Dial's own, dual-stack
// [::], 127.0.0.1, ::1) x target host (localhost, 127.0.0.1, [::1],
// [::ffff:127.0.0.1], the host's name). Where one of the target's
// addresses is of a family both sockets have, the dial connects to the
// first such address with one connect packet (no retransmission: one
// round trip) and a call completes; where none is, it fails, before
// sending anything when the client's socket cannot send to any of them,
// naming the target and the address tried either way.
func TestDialAddressForms(t *testing.T) {
	checkLeaks(t)
	haveV6 := hasIPv6Loopback()
	servers := []struct {
		listen  string
		accepts family
	}{
		{"[::]:0", v4 | v6},
		{"0.0.0.0:0", v4 | v6},
		{"127.0.0.1:0", v4},
		{"[::1]:0", v6},
	}
	clients := []struct {
		listen  string // "": the package-level erpc.Dial
		reaches family
	}{
		{"", v4 | v6},
		{"udp://[::]:0", v4 | v6},
		{"udp://127.0.0.1:0", v4},
		{"udp://[::1]:0", v6},
	}
	forms := dialForms(t)
	for _, sv := range servers {
		if sv.accepts == v6 && !haveV6 {
			t.Logf("server on %s: skipped, this host has no IPv6 loopback (::1)", sv.listen)
			continue
		}
		ep := listenT(t, serverWith(t, "Echo", echoHandler), sv.listen)
		port := ep.Addr().Port()
		for _, cl := range clients {
			for _, host := range forms {
				name := fmt.Sprintf("server=%s/client=%s/target=%s", sv.listen, cl.listen, host)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					addrs := formAddrs(t, host)
					if !haveV6 && (cl.reaches == v6 || familyOf(addrs[0]) == v6) {
						t.Skip("this host has no IPv6 loopback (::1)")
					}
					dialForm(t, fmt.Sprintf("%s:%d", host, port), addrs, port, cl.listen, cl.reaches, sv.accepts)
				})
			}
		}
	}
}

// dialForm dials target from a client socket on clientListen and checks
// the outcome the families predict.
func dialForm(t *testing.T, target string, addrs []netip.Addr, port uint16, clientListen string, reaches, accepts family) {
	var want netip.AddrPort // the first address both sockets have the family of
	sendable, silentFirst := 0, false
	for _, a := range addrs {
		f := familyOf(a)
		if reaches&f == 0 {
			continue
		}
		sendable++
		if accepts&f != 0 {
			want = netip.AddrPortFrom(a.Unmap(), port)
			break
		}
		silentFirst = true // the client sends there, nothing answers
	}
	opts := []erpc.Option{erpc.WithFailureTimeout(300 * time.Millisecond)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var s *erpc.Session
	var cli *erpc.Endpoint
	var err error
	if clientListen == "" {
		s, err = erpc.Dial(ctx, target, opts...)
	} else {
		cli = listenT(t, nil, clientListen, opts...)
		s, err = cli.Dial(ctx, target)
	}
	if !want.IsValid() {
		if err == nil {
			s.Close()
			t.Fatalf("dial %s connected to %v, which neither socket family allows", target, s.Addr())
		}
		wantCode := erpc.Unavailable
		if sendable == 0 {
			wantCode = erpc.InvalidArgument // known before anything is sent
			if !strings.Contains(err.Error(), "cannot send to") || cli != nil && cli.Stats().PacketsOut != 0 {
				t.Errorf("dial %s: %v, want a refusal before sending anything, as the client's socket can reach none of %v", target, err, addrs)
			}
		}
		if erpc.CodeOf(err) != wantCode || !strings.Contains(err.Error(), fmt.Sprintf("%q", target)) ||
			!strings.Contains(err.Error(), fmt.Sprint(port)) {
			t.Fatalf("dial %s: %v, want %v naming the target and the address tried", target, err, wantCode)
		}
		return
	}
	if err != nil {
		t.Fatalf("dial %s (want a session to %v): %v", target, want, err)
	}
	defer s.Close()
	if s.Addr() != want {
		t.Errorf("dial %s: session to %v, want %v (plain IPv4, never IPv4-mapped)", target, s.Addr(), want)
	}
	if sent := s.Endpoint().Stats().PacketsOut; !silentFirst && sent != 1 {
		t.Errorf("dial %s: %d packets sent to connect, want 1 (one round trip, no retransmitted connect)", target, sent)
	}
	resp, err := s.Call(ctx, "Echo", []byte(target), nil)
	if err != nil || string(resp) != target {
		t.Fatalf("call over %s: %q, %v", target, resp, err)
	}
}

// BenchmarkDial is a session's set-up, one round trip, by each host form,
// from a dual-stack client endpoint of its own (one per form: under gVisor
// a client-only socket that talked to an IPv4 peer hears no IPv6 one
// after): a name adds its look-up.
func BenchmarkDial(b *testing.B) {
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", echoHandler); err != nil {
		b.Fatal(err)
	}
	ep, err := srv.Listen("[::]:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	for _, host := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "localhost", "[::1]"} {
		target := fmt.Sprintf("%s:%d", host, ep.Addr().Port())
		b.Run(host, func(b *testing.B) {
			cli, err := erpc.Listen(":0")
			if err != nil {
				b.Fatal(err)
			}
			defer cli.Close()
			for b.Loop() {
				s, err := cli.Dial(context.Background(), target)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
