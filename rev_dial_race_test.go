package erpc_test

// Adversarial test of Dial's promises about targets (review branch
// rev-dial): it fails on the code it was written against; its comment
// says which promise it holds Dial to.

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// busyServer is an erpc server on at whose event loop is held for hold
// from the moment the returned function returns: an inline handler
// sleeps, called by a client of its own. Connects that arrive meanwhile
// are answered when it ends.
func busyServer(t *testing.T, at string, hold time.Duration) (*erpc.Endpoint, func()) {
	started := make(chan struct{}, 1)
	srv := listenT(t, serverWith(t, "Sleep", func(_ context.Context, req []byte) ([]byte, error) {
		started <- struct{}{}
		time.Sleep(hold)
		return req, nil
	}), at)
	holder, err := erpc.Dial(context.Background(), srv.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	return srv, func() {
		go holder.Call(context.Background(), "Sleep", nil, nil)
		<-started
	}
}

// serverSessionsSettle waits for srv's busy loop to have handled what came
// meanwhile (500 ms), then up to 1.5 s more for srv to hold want sessions,
// and says how many it holds.
func serverSessionsSettle(srv *erpc.Endpoint, want int) int {
	time.Sleep(500 * time.Millisecond)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) && srv.Stats().ServerSessions != want {
		time.Sleep(20 * time.Millisecond)
	}
	return srv.Stats().ServerSessions
}

// TestRevDialLoserSessionClosed: the first address to accept wins and the
// others are closed. An attempt the dial gives up on while its connect is
// on its way (it lost the race, or the dial's context ended) is closed on
// the client only: Engine.Close of a session that is not up sends nothing,
// and the connect-ack that comes later is dropped as for an unknown
// session. The server accepted the connect and keeps the session until
// its idle timeout (30 s by default).
func TestRevDialLoserSessionClosed(t *testing.T) {
	checkLeaks(t)
	if !hasIPv6Loopback() {
		t.Skip("no IPv6 loopback")
	}
	t.Run("lost the race", func(t *testing.T) {
		// The name's first address is a server whose loop is busy for
		// 400 ms; its second, tried 250 ms later, answers at once.
		slow, hold := busyServer(t, "127.0.0.1:0", 400*time.Millisecond)
		port := slow.Addr().Port()
		fast := listenT(t, serverWith(t, "Echo", echoHandler), netip.AddrPortFrom(netip.IPv6Loopback(), port).String())
		hold()
		r := &fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}}
		s, err := erpc.Dial(context.Background(), fmt.Sprintf("race.test:%d", port), erpc.WithResolver(r))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Addr() != fast.Addr() {
			t.Fatalf("session to %v, want the fast server's %v", s.Addr(), fast.Addr())
		}
		if n := serverSessionsSettle(slow, 1); n != 1 {
			t.Errorf("the losing server holds %d sessions 2 s after the dial, want 1 (its holder's): the loser's is open on the server (client dropped %d answers from an unknown session)",
				n, s.Endpoint().Stats().DropUnknownSession)
		}
	})
	t.Run("context ended", func(t *testing.T) {
		slow, hold := busyServer(t, "127.0.0.1:0", 400*time.Millisecond)
		cli := listenT(t, nil, "udp://127.0.0.1:0")
		hold()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := cli.Dial(ctx, slow.Target()); erpc.CodeOf(err) != erpc.DeadlineExceeded {
			t.Fatalf("dial: %v, want DeadlineExceeded", err)
		}
		if n := serverSessionsSettle(slow, 1); n != 1 || cli.Stats().ClientSessions != 0 {
			t.Errorf("after a dial abandoned mid-connect: the server holds %d sessions (want 1, its holder's), the client %d (want 0)",
				n, cli.Stats().ClientSessions)
		}
	})
}
