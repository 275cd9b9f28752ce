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
		ep := listenT(t, serverWith(t, "Echo", echoHandler), sv.listen, erpc.Insecure()) // wildcards: plaintext on purpose
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
	if sent := s.Endpoint().Stats().ConnectsSent; !silentFirst && sent != 1 {
		t.Errorf("dial %s: %d connects sent, want 1 (one round trip, no retransmitted connect)", target, sent)
	}
	resp, err := s.Call(ctx, "Echo", []byte(target), nil)
	if err != nil || string(resp) != target {
		t.Fatalf("call over %s: %q, %v", target, resp, err)
	}
}

// BenchmarkDial is a session's set-up, one round trip, by each host form,
// from a dual-stack client endpoint of its own (one per form, so that no
// form's session is still open when the next dials): a name adds its
// look-up.
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

// loopbackName is the name of this host's loopback interface ("lo").
func loopbackName(t *testing.T) string {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagLoopback != 0 {
			return ifc.Name
		}
	}
	t.Skip("no loopback interface")
	return ""
}

// TestDialZoneScopedIPv6: an IPv6 address in brackets may carry a zone
// (RFC 4007; "[::1%lo]" is the loopback address on the loopback
// interface). Dial reaches the server by it as by "[::1]": one connect
// packet, one round trip, a session to the zoneless address the answers
// come from, whether the zoned address is literal or a resolver's. A
// link-local address (fe80::/10), whose zone the transport does not
// carry, fails at once with InvalidArgument, before anything is sent.
func TestDialZoneScopedIPv6(t *testing.T) {
	checkLeaks(t)
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback")
	}
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "[::1]:0")
	port := srv.Addr().Port()
	lo := loopbackName(t)
	for _, zone := range []string{lo, "1"} {
		for _, viaName := range []bool{false, true} {
			target := fmt.Sprintf("[::1%%%s]:%d", zone, port)
			var opts []erpc.Option
			if viaName {
				target = fmt.Sprintf("zoned.test:%d", port)
				opts = append(opts, erpc.WithResolver(&fakeResolver{addrs: []netip.Addr{netip.IPv6Loopback().WithZone(zone)}}))
			}
			cli := listenT(t, nil, "udp://[::]:0", append(opts, erpc.WithFailureTimeout(500*time.Millisecond))...)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			start := time.Now()
			s, err := cli.Dial(ctx, target)
			el := time.Since(start)
			cancel()
			if err != nil {
				st := cli.Stats()
				t.Errorf("dial %s (zone %s): %v after %v (client sent %d, dropped %d answers from an unknown session; server sent %d)",
					target, zone, err, el.Round(time.Millisecond), st.PacketsOut, st.DropUnknownSession, srv.Stats().PacketsOut)
				continue
			}
			if sent := cli.Stats().ConnectsSent; sent != 1 || s.Addr().Addr().Zone() == "" && s.Addr() != srv.Addr() {
				t.Errorf("dial %s: session to %v after %d connects, want %v after 1", target, s.Addr(), sent, srv.Addr())
			}
			s.Close()
		}
	}
	for _, host := range []string{"[fe80::1%" + lo + "]", "[fe80::1]", "[fe80::1%1]"} {
		cli := listenT(t, nil, "udp://[::]:0")
		target := fmt.Sprintf("%s:%d", host, port)
		_, err := cli.Dial(context.Background(), target)
		if erpc.CodeOf(err) != erpc.InvalidArgument || !strings.Contains(fmt.Sprint(err), "link-local") || cli.Stats().PacketsOut != 0 {
			t.Errorf("dial %s: %v after %d packets, want InvalidArgument naming link-local before sending", target, err, cli.Stats().PacketsOut)
		}
	}
}

// TestDialUnspecifiedHost: "0.0.0.0", "[::]" and the IPv4-mapped
// "[::ffff:0:0]" are addresses a hurried user copies from a listen line
// (and a name may resolve to 0.0.0.0: blocklists in /etc/hosts). As in
// package net they mean this host: Dial reaches the server there in one
// round trip (or refuses at once with InvalidArgument, before sending).
// A server on such an address has a Target that dials it.
func TestDialUnspecifiedHost(t *testing.T) {
	checkLeaks(t)
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "[::]:0", erpc.Insecure())
	port := srv.Addr().Port()
	for _, host := range []string{"0.0.0.0", "[::]", "[::ffff:0:0]", "unspecified.test"} {
		target := fmt.Sprintf("%s:%d", host, port)
		cli := listenT(t, nil, "udp://[::]:0", erpc.WithFailureTimeout(500*time.Millisecond),
			erpc.WithResolver(&fakeResolver{addrs: []netip.Addr{netip.IPv4Unspecified()}}))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		start := time.Now()
		s, err := cli.Dial(ctx, target)
		el := time.Since(start)
		cancel()
		switch {
		case err == nil:
			if sent := cli.Stats().ConnectsSent; sent != 1 {
				t.Errorf("dial %s: session to %v after %d connects, want 1", target, s.Addr(), sent)
			}
			s.Close()
		case erpc.CodeOf(err) == erpc.InvalidArgument && cli.Stats().PacketsOut == 0:
		default:
			t.Errorf("dial %s: %v after %v, %d packets sent (the server answered %d of them); want a session in one round trip, or InvalidArgument before sending",
				target, err, el.Round(time.Millisecond), cli.Stats().PacketsOut, srv.Stats().PacketsOut)
		}
	}
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", ":0"} {
		ep := listenT(t, serverWith(t, "Echo", echoHandler), listen, erpc.Insecure())
		s, err := erpc.Dial(context.Background(), ep.Target())
		if err != nil {
			t.Errorf("server on %s: dial its Target %s: %v", listen, ep.Target(), err)
			continue
		}
		if resp, err := s.Call(context.Background(), "Echo", []byte("x"), nil); err != nil || string(resp) != "x" {
			t.Errorf("server on %s: call over its Target %s: %q, %v", listen, ep.Target(), resp, err)
		}
		s.Close()
	}
}

// TestDialDualStackEndpointReachesBothFamilies: an endpoint on [::],
// 0.0.0.0 or :0 is dual-stack and dials both IPv4 and IPv6, in either
// order. A client-only one (erpc.Listen) that dialed an IPv4 server first
// could not reach an IPv6 one on Linux (6.18): its socket was connected
// to the IPv4 peer and disconnected when the second peer appeared, and
// the kernel kept its IPv4-mapped peer address, so datagrams from ::1
// never reached it.
func TestDialDualStackEndpointReachesBothFamilies(t *testing.T) {
	checkLeaks(t)
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback")
	}
	srv4 := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0")
	srv6 := listenT(t, serverWith(t, "Echo", echoHandler), "[::1]:0")
	for _, listen := range []string{"udp://[::]:0", "udp://0.0.0.0:0", "udp://:0"} {
		cli := listenT(t, nil, listen, erpc.WithFailureTimeout(500*time.Millisecond))
		for _, srv := range []*erpc.Endpoint{srv4, srv6, srv4} {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			s, err := cli.Dial(ctx, srv.Target())
			if err == nil {
				var resp []byte
				resp, err = s.Call(ctx, "Echo", []byte("x"), nil)
				if err == nil && string(resp) != "x" {
					err = fmt.Errorf("echo %q", resp)
				}
			}
			cancel()
			if err != nil {
				t.Errorf("endpoint on %s, after dialing %v: dial %s: %v", listen, srv4.Addr(), srv.Target(), err)
			}
		}
	}
}

// TestDialSocketOfTargetFamily: erpc.Dial opens a socket of the family
// its target's addresses have, which it connects to the server (the
// kernel then drops a stranger's datagram: the engine never sees it), and
// a dual-stack one, never connected, when they have both (the stranger's
// datagram reaches the engine, which drops it as malformed).
func TestDialSocketOfTargetFamily(t *testing.T) {
	checkLeaks(t)
	families := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	if hasIPv6Loopback() {
		families = append(families, netip.IPv6Loopback())
	}
	for _, ip := range families {
		srv := listenT(t, serverWith(t, "Echo", echoHandler), netip.AddrPortFrom(ip, 0).String())
		port := srv.Addr().Port()
		targets := map[string]int64{netip.AddrPortFrom(ip, port).String(): 0} // strangers' datagrams the engine sees
		if len(families) == 2 {
			targets[fmt.Sprintf("both.test:%d", port)] = 1
		}
		for target, want := range targets {
			r := &fakeResolver{addrs: []netip.Addr{ip}} // then the other family
			for _, other := range families {
				if other != ip {
					r.addrs = append(r.addrs, other)
				}
			}
			s, err := erpc.Dial(context.Background(), target, erpc.WithResolver(r))
			if err != nil {
				t.Fatalf("dial %s: %v", target, err)
			}
			stranger, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, s.Endpoint().Addr().Port())))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stranger.Write([]byte("not erpc")); err != nil {
				t.Fatal(err)
			}
			stranger.Close()
			// Loopback delivers at send time: the call's answer comes after.
			if resp, err := s.Call(context.Background(), "Echo", []byte("x"), nil); err != nil || string(resp) != "x" {
				t.Fatalf("call over %s: %q, %v", target, resp, err)
			}
			if got := int64(s.Endpoint().Stats().DropMalformed); got != want {
				t.Errorf("dial %s: the engine saw %d strangers' datagrams, want %d (connected socket: 0, dual-stack: 1)", target, got, want)
			}
			s.Close()
		}
	}
}
