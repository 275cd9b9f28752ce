package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// fakeResolver answers every name with addrs (or err), or, when block is
// set, waits for the look-up's context to end; it counts its look-ups.
type fakeResolver struct {
	addrs []netip.Addr
	err   error
	block bool
	calls atomic.Int32
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	if r.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return r.addrs, r.err
}

// silentPeer is a UDP socket that counts what it receives and answers
// nothing: an address where no erpc server listens and the network says
// nothing either.
type silentPeer struct {
	conn *net.UDPConn
	got  atomic.Int32
}

func listenSilent(t *testing.T, at netip.AddrPort) *silentPeer {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(at))
	if err != nil {
		t.Skipf("bind %v: %v", at, err)
	}
	p := &silentPeer{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<16)
		for {
			if _, _, err := conn.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
			p.got.Add(1)
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return p
}

// loopbackIPs are n IPv4 loopback addresses this host can bind (Linux
// routes all of 127/8 to lo); the test is skipped where it cannot.
func loopbackIPs(t *testing.T, n int) []netip.Addr {
	ips := make([]netip.Addr, n)
	for i := range ips {
		ips[i] = netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ips[i].AsSlice()})
		if err != nil {
			t.Skipf("this host cannot bind %v (only Linux routes all of 127/8 to loopback): %v", ips[i], err)
		}
		c.Close()
	}
	return ips
}

// TestDialTriesEachAddress: a name whose addresses come in a random
// order, with a random number of dead ones (nothing answers there, or an
// erpc endpoint that refuses sessions) before and after the server's,
// connects to the server's (seeded; the seed is logged). Every dead
// address before it was tried (its socket, or the refusing endpoint,
// counted a connect), and the server got one connect: its attempt took
// one round trip.
func TestDialTriesEachAddress(t *testing.T) {
	checkLeaks(t)
	ips := loopbackIPs(t, 6)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 27))
	for iter := range 8 {
		order := rng.Perm(len(ips))
		before, after := rng.IntN(3), rng.IntN(3)
		live := ips[order[before]]
		srv := listenT(t, serverWith(t, "Echo", echoHandler), netip.AddrPortFrom(live, 0).String())
		port := srv.Addr().Port()
		r := &fakeResolver{}
		var silent []*silentPeer
		var refusing []*erpc.Endpoint
		for k, i := range order[:before+1+after] {
			at := netip.AddrPortFrom(ips[i], port)
			r.addrs = append(r.addrs, ips[i])
			switch {
			case k == before: // the server's
			case rng.IntN(2) == 0:
				p := listenSilent(t, at)
				if k < before {
					silent = append(silent, p)
				}
			default:
				ep := listenT(t, nil, at.String())
				if k < before {
					refusing = append(refusing, ep)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := erpc.Dial(ctx, fmt.Sprintf("svc.test:%d", port), erpc.WithResolver(r))
		if err != nil {
			cancel()
			t.Fatalf("iteration %d: dial %v (server at %v): %v", iter, r.addrs, live, err)
		}
		if s.Addr() != netip.AddrPortFrom(live, port) || r.calls.Load() != 1 {
			t.Errorf("iteration %d: session to %v after %d look-ups, want %v:%d after 1", iter, s.Addr(), r.calls.Load(), live, port)
		}
		// Its one connect, and perhaps already the ping by which the client
		// confirms the session at once (the server's half-open bound).
		if in := srv.Stats().PacketsIn; in < 1 || in > 2 {
			t.Errorf("iteration %d: the server got %d packets by the time the dial returned, want its one connect (and the confirming ping)", iter, in)
		}
		if resp, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil || string(resp) != "x" {
			t.Errorf("iteration %d: call: %q, %v", iter, resp, err)
		}
		for _, p := range silent {
			if p.got.Load() == 0 {
				t.Errorf("iteration %d: %v, before the server's address, was never tried", iter, p.conn.LocalAddr())
			}
		}
		for _, ep := range refusing {
			if ep.Stats().PacketsIn == 0 {
				t.Errorf("iteration %d: %v, before the server's address, got no connect to refuse", iter, ep.Addr())
			}
		}
		s.Close()
		cancel()
	}
}

// TestDialErrorListsAddresses: when none of a name's addresses accepts,
// the error lists each address and how it failed, whether the failure
// timeout or the context ends the dial.
func TestDialErrorListsAddresses(t *testing.T) {
	checkLeaks(t)
	ips := loopbackIPs(t, 3)
	quiet := listenSilent(t, netip.AddrPortFrom(ips[0], 0))
	port := quiet.conn.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	refuser := listenT(t, nil, netip.AddrPortFrom(ips[1], port).String())
	quiet2 := listenSilent(t, netip.AddrPortFrom(ips[2], port))
	r := &fakeResolver{addrs: ips}
	target := fmt.Sprintf("nobody.test:%d", port)

	_, err := erpc.Dial(context.Background(), target, erpc.WithResolver(r), erpc.WithFailureTimeout(200*time.Millisecond))
	msg := fmt.Sprint(err)
	if erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(msg, fmt.Sprintf("%q", target)) || !strings.Contains(msg, "tried 3 addresses") {
		t.Fatalf("dial with nothing serving: %v, want Unavailable naming the target and 3 addresses", err)
	}
	for i, why := range []string{"no answer within the failure timeout", "server refused the session: the endpoint serves no handlers", "no answer within the failure timeout"} {
		if want := fmt.Sprintf("%v: %s", netip.AddrPortFrom(ips[i], port), why); !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if quiet.got.Load() == 0 || quiet2.got.Load() == 0 || refuser.Stats().PacketsIn == 0 {
		t.Errorf("not every address was tried: %d and %d connects to the silent ones, %d to the refusing one",
			quiet.got.Load(), quiet2.got.Load(), refuser.Stats().PacketsIn)
	}

	// The context ends before the next address is due (attemptDelay).
	r = &fakeResolver{addrs: []netip.Addr{ips[0], ips[2]}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = erpc.Dial(ctx, target, erpc.WithResolver(r))
	msg = fmt.Sprint(err)
	first, second := netip.AddrPortFrom(ips[0], port), netip.AddrPortFrom(ips[2], port)
	if erpc.CodeOf(err) != erpc.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(msg, fmt.Sprintf("%v: no answer yet", first)) || !strings.Contains(msg, fmt.Sprintf("%v: not tried yet", second)) {
		t.Errorf("dial cut short by its context: %v, want DeadlineExceeded saying %v had no answer yet and %v was not tried", err, first, second)
	}
}

// TestDialResolvesWithContext: the look-up runs under the dial's context,
// a name that does not exist fails at once with InvalidArgument, and the
// IPv4-mapped addresses a resolver may give (Go's does for /etc/hosts
// entries) reach an IPv4 server.
func TestDialResolvesWithContext(t *testing.T) {
	checkLeaks(t)
	r := &fakeResolver{block: true}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := erpc.Dial(ctx, "slow.test:1", erpc.WithResolver(r))
	if erpc.CodeOf(err) != erpc.DeadlineExceeded || r.calls.Load() != 1 || !strings.Contains(fmt.Sprint(err), "looking up the host") {
		t.Errorf("dial whose look-up outlives its context: %v after %d look-ups, want DeadlineExceeded from the look-up", err, r.calls.Load())
	}

	r = &fakeResolver{err: &net.DNSError{Err: "no such host", Name: "typo.test", IsNotFound: true}}
	if _, err := erpc.Dial(context.Background(), "typo.test:1", erpc.WithResolver(r)); erpc.CodeOf(err) != erpc.InvalidArgument ||
		!strings.Contains(fmt.Sprint(err), `"typo.test:1"`) {
		t.Errorf("dial of a name that does not exist: %v, want InvalidArgument naming the target", err)
	}

	srv := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0")
	mapped := netip.AddrFrom16(netip.MustParseAddr("127.0.0.1").As16())
	r = &fakeResolver{addrs: []netip.Addr{mapped, mapped}}
	s, err := erpc.Dial(context.Background(), fmt.Sprintf("mapped.test:%d", srv.Addr().Port()), erpc.WithResolver(r))
	if err != nil {
		t.Fatalf("dial of a name resolving to %v: %v", mapped, err)
	}
	defer s.Close()
	if s.Addr() != srv.Addr() || s.Endpoint().Stats().ConnectsSent != 1 {
		t.Errorf("session to %v after %d connects, want %v after 1", s.Addr(), s.Endpoint().Stats().ConnectsSent, srv.Addr())
	}
}

// TestDialAcrossFamilies: a name with an IPv4 and an IPv6 address, where
// only the second has a server, connects from erpc.Dial's dual-stack,
// client-only endpoint in either order: trying the first address must not
// leave the socket deaf to the other family (a dual-stack socket
// connected to an IPv4 peer and disconnected again hears no IPv6 peer
// under gVisor).
func TestDialAcrossFamilies(t *testing.T) {
	checkLeaks(t)
	if !hasIPv6Loopback() {
		t.Skip("this host has no IPv6 loopback (::1)")
	}
	v4, v6 := netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()
	for _, order := range [][2]netip.Addr{{v4, v6}, {v6, v4}} {
		srv := listenT(t, serverWith(t, "Echo", echoHandler), netip.AddrPortFrom(order[1], 0).String())
		port := srv.Addr().Port()
		dead := listenSilent(t, netip.AddrPortFrom(order[0], port))
		r := &fakeResolver{addrs: order[:]}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := erpc.Dial(ctx, fmt.Sprintf("both.test:%d", port), erpc.WithResolver(r))
		if err != nil {
			cancel()
			t.Fatalf("dial %v, server on the second: %v", order, err)
		}
		if resp, err := s.Call(ctx, "Echo", []byte("x"), nil); err != nil || string(resp) != "x" {
			t.Errorf("dial %v: call: %q, %v", order, resp, err)
		}
		if in := srv.Stats().PacketsIn; s.Addr() != srv.Addr() || dead.got.Load() == 0 || in < 2 || in > 3 {
			t.Errorf("dial %v: session to %v (want %v), %d connects to the first address (want some), %d packets to the server (want a connect, the confirming ping and a request)",
				order, s.Addr(), srv.Addr(), dead.got.Load(), srv.Stats().PacketsIn)
		}
		s.Close()
		cancel()
	}
}

// ctxResolver returns addrs, ending the dial's context as it does (a
// service-discovery resolver that answers as the caller gives up).
type ctxResolver struct {
	addrs  []netip.Addr
	cancel context.CancelFunc
}

func (r *ctxResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.cancel()
	return r.addrs, nil
}

// TestDialContextEndedDuringLookup: the look-up runs under the dial's
// context. When that context ends during the look-up, the dial ends there,
// saying so, and sends nothing. It goes on instead: dialEach starts the
// first attempt before it looks at the context, so a connect goes out, the
// server opens a session (which it keeps), and the error says the address
// was tried and had "no answer yet".
func TestDialContextEndedDuringLookup(t *testing.T) {
	checkLeaks(t)
	srv := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &ctxResolver{addrs: []netip.Addr{srv.Addr().Addr()}, cancel: cancel}
	_, err := erpc.Dial(ctx, fmt.Sprintf("late.test:%d", srv.Addr().Port()), erpc.WithResolver(r))
	time.Sleep(100 * time.Millisecond)
	if erpc.CodeOf(err) != erpc.Canceled || strings.Contains(fmt.Sprint(err), "tried") || srv.Stats().PacketsIn != 0 {
		t.Errorf("dial whose context ended during the look-up: %v; the server got %d packets and holds %d sessions; want Canceled from the look-up, nothing sent",
			err, srv.Stats().PacketsIn, srv.Stats().ServerSessions)
	}

	cli := listenT(t, nil, "udp://127.0.0.1:0")
	if _, err := cli.Dial(ctx, srv.Target()); erpc.CodeOf(err) != erpc.Canceled || strings.Contains(fmt.Sprint(err), "tried") || cli.Stats().PacketsOut != 0 {
		t.Errorf("dial of %s with an ended context: %v after %d packets, want Canceled before sending", srv.Target(), err, cli.Stats().PacketsOut)
	}

	deaf := &deafResolver{release: make(chan struct{}), addrs: []netip.Addr{srv.Addr().Addr()}}
	defer close(deaf.release)
	dctx, dcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer dcancel()
	_, err = erpc.Dial(dctx, fmt.Sprintf("deaf.test:%d", srv.Addr().Port()), erpc.WithResolver(deaf))
	if erpc.CodeOf(err) != erpc.DeadlineExceeded || deaf.calls.Load() != 1 || deaf.returned.Load() || !strings.Contains(fmt.Sprint(err), "looking up the host") {
		t.Errorf("dial whose resolver ignores the context: %v after %d look-ups (returned: %v), want DeadlineExceeded from the look-up while it still runs",
			err, deaf.calls.Load(), deaf.returned.Load())
	}
}

// deafResolver ignores its context: it answers when released, or after
// 2 s.
type deafResolver struct {
	release  chan struct{}
	addrs    []netip.Addr
	calls    atomic.Int32
	returned atomic.Bool
}

func (r *deafResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	select {
	case <-r.release:
	case <-time.After(2 * time.Second):
	}
	r.returned.Store(true)
	return r.addrs, nil
}

// busyServer is an erpc server on at whose event loop is held for hold
// from the moment the returned function returns: an inline handler
// sleeps, called by a client of its own, and is never handed off
// (WithHandoff(-1)). Connects that arrive meanwhile are answered when it
// ends.
func busyServer(t *testing.T, at string, hold time.Duration) (*erpc.Endpoint, func()) {
	started := make(chan struct{}, 1)
	srv := listenT(t, serverWith(t, "Sleep", func(_ context.Context, req []byte) ([]byte, error) {
		started <- struct{}{}
		time.Sleep(hold)
		return req, nil
	}), at, erpc.WithHandoff(-1))
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

// TestDialLoserSessionClosed: the first address to accept wins and the
// others are closed. An attempt the dial gives up on while its connect is
// on its way (it lost the race, or the dial's context ended) is closed on
// the client only: Engine.Close of a session that is not up sends nothing,
// and the connect-ack that comes later is dropped as for an unknown
// session. The server accepted the connect and keeps the session until
// its idle timeout (30 s by default).
func TestDialLoserSessionClosed(t *testing.T) {
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
