package erpc_test

// Adversarial test of Dial's promises about targets (review branch
// rev-dial): it fails on the code it was written against; its comment
// says which promise it holds Dial to.

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

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

// TestRevDialZoneScopedIPv6: an IPv6 address in brackets may carry a zone
// (RFC 4007; ::1 has link-local scope, so "[::1%lo]" is the loopback
// address on the loopback interface). Dial reaches the server by it as by
// "[::1]": one connect packet, one round trip. The server does answer,
// but the engine waits for an answer from ::1%lo while the transport
// reports it as coming from ::1 (no zone), and drops every one.
func TestRevDialZoneScopedIPv6(t *testing.T) {
	checkLeaks(t)
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback")
	}
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "[::1]:0")
	port := srv.Addr().Port()
	for _, zone := range []string{loopbackName(t), "1"} {
		target := fmt.Sprintf("[::1%%%s]:%d", zone, port)
		cli := listenT(t, nil, "udp://[::]:0", erpc.WithFailureTimeout(500*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		start := time.Now()
		s, err := cli.Dial(ctx, target)
		el := time.Since(start)
		cancel()
		if err != nil {
			st := cli.Stats()
			t.Errorf("dial %s: %v after %v (client sent %d, dropped %d answers from an unknown session; server sent %d)",
				target, err, el.Round(time.Millisecond), st.PacketsOut, st.DropUnknownSession, srv.Stats().PacketsOut)
			continue
		}
		if sent := cli.Stats().PacketsOut; sent != 1 || s.Addr().Addr().Zone() == "" && s.Addr() != srv.Addr() {
			t.Errorf("dial %s: session to %v after %d packets, want %v after 1", target, s.Addr(), sent, srv.Addr())
		}
		s.Close()
	}
}

// TestRevDialUnspecifiedHost: "0.0.0.0", "[::]" and the IPv4-mapped
// "[::ffff:0:0]" are addresses a hurried user copies from a listen line.
// Dial either reaches the server by them in one round trip (the kernel
// delivers a datagram to the unspecified address to this host) or refuses
// them at once with InvalidArgument, before anything is sent. It does
// neither: it sends the connect, the server accepts and answers (from
// 127.0.0.1 or ::1), the engine drops the answers as coming from the
// wrong address, and the dial fails only at the failure timeout, leaving
// a session on the server.
func TestRevDialUnspecifiedHost(t *testing.T) {
	checkLeaks(t)
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "[::]:0")
	port := srv.Addr().Port()
	for _, host := range []string{"0.0.0.0", "[::]", "[::ffff:0:0]"} {
		target := fmt.Sprintf("%s:%d", host, port)
		cli := listenT(t, nil, "udp://[::]:0", erpc.WithFailureTimeout(500*time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		start := time.Now()
		s, err := cli.Dial(ctx, target)
		el := time.Since(start)
		cancel()
		switch {
		case err == nil:
			if sent := cli.Stats().PacketsOut; sent != 1 {
				t.Errorf("dial %s: session to %v after %d packets, want 1", target, s.Addr(), sent)
			}
			s.Close()
		case erpc.CodeOf(err) == erpc.InvalidArgument && cli.Stats().PacketsOut == 0:
		default:
			t.Errorf("dial %s: %v after %v, %d packets sent (the server answered %d of them); want a session in one round trip, or InvalidArgument before sending",
				target, err, el.Round(time.Millisecond), cli.Stats().PacketsOut, srv.Stats().PacketsOut)
		}
	}
}
