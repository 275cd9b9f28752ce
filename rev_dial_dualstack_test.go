package erpc_test

// Adversarial test of Dial's promises about targets (review branch
// rev-dial): it fails on the code it was written against; its comment
// says which promise it holds Dial to.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestRevDualStackEndpointDialsBothFamilies: an endpoint on [::], 0.0.0.0
// or :0 is dual-stack and dials both IPv4 and IPv6. A client-only one
// (erpc.Listen) that dialed an IPv4 server first cannot then reach an
// IPv6 one on this Linux (6.18): its socket was connected to the IPv4 peer
// and disconnected (connect AF_UNSPEC) when the second peer appeared, and
// the kernel keeps the socket's IPv6 peer address (ss shows
// "[::ffff:127.0.0.1]:*") after the disconnect, so datagrams from ::1
// never reach it. Not only gVisor, as udp.Transport.StayUnconnected's doc
// says; Endpoint.Dial's doc does not mention it, and the dial fails only
// at the failure timeout, as "no answer".
func TestRevDualStackEndpointDialsBothFamilies(t *testing.T) {
	checkLeaks(t)
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback")
	}
	srv4 := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0")
	srv6 := listenT(t, serverWith(t, "Echo", echoHandler), "[::1]:0")
	for _, listen := range []string{"udp://[::]:0", "udp://0.0.0.0:0", "udp://:0"} {
		cli := listenT(t, nil, listen, erpc.WithFailureTimeout(500*time.Millisecond))
		for _, srv := range []*erpc.Endpoint{srv4, srv6} {
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
