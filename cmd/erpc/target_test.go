package main

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestTargetForms: the command reaches a dual-stack server ([::]) by
// localhost, [::1], the IPv4-mapped [::ffff:127.0.0.1] and 127.0.0.1,
// with or without udp://, and completes a call each time; with nothing
// there it says which address it tried.
func TestTargetForms(t *testing.T) {
	t.Parallel()
	listen, forms := "[::]:0", []string{"localhost", "[::1]", "[::ffff:127.0.0.1]", "127.0.0.1", "udp://localhost", "udp://[::1]"}
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		t.Logf("no IPv6 loopback (::1): the [::1] forms are skipped (%v)", err)
		listen, forms = "127.0.0.1:0", []string{"localhost", "[::ffff:127.0.0.1]", "127.0.0.1", "udp://localhost"}
	} else {
		c.Close()
	}
	srvTarget := startServerOn(t, modeFull, listen)
	ap, err := netip.ParseAddrPort(strings.TrimPrefix(srvTarget, "udp://"))
	if err != nil {
		t.Fatalf("the server's target %q: %v", srvTarget, err)
	}
	for _, host := range forms {
		target := fmt.Sprintf("%s:%d", host, ap.Port())
		expect(t, erpcCmd(t, "", target, "health"), 0, "SERVING\n", "")
		expect(t, erpcCmd(t, "", "-d", `{"A": 2, "B": 3}`, target, "Add"), 0, `"Sum": 5`, "")
	}

	dead, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := dead.LocalAddr().(*net.UDPAddr).Port
	dead.Close()
	target := fmt.Sprintf("localhost:%d", port)
	expect(t, erpcCmd(t, "", "-connect-timeout", "300ms", target, "health"), 1, "",
		fmt.Sprintf("127.0.0.1:%d: no answer yet", port)) // after [::1]'s where localhost has both
}
