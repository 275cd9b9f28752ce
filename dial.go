package erpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// HostResolver looks up the addresses of a host name, as *net.Resolver
// does (network "ip": both families). WithResolver sets an endpoint's.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// attemptDelay is how long Dial waits for one address of a name that has
// several before it tries the next one alongside (RFC 8305's connection
// attempt delay): an address where nothing answers costs this, not the
// failure timeout. An attempt that fails outright starts the next at once.
const attemptDelay = 250 * time.Millisecond

// Dial opens a session from ep to the endpoint at target, of the same
// transport as ep: its Target ("udp://host:port", "mem://name",
// "shm:///path/to/socket"), or an address of ep's transport without a
// scheme ("host:port"). It waits until the server accepts the session or
// ctx ends.
//
// A UDP host is an IPv4 or IPv6 address ("127.0.0.1", "[::1]", or an
// IPv4-mapped one, "[::ffff:127.0.0.1]", which is the IPv4 address) or a
// name, looked up with ctx (WithResolver). A name's addresses are tried in
// the order the resolver gives them, which for DNS is the standard
// library's preference (RFC 6724): the next starts when one fails, or
// after 250 ms without an answer while the earlier ones go on; the first
// to accept wins. Addresses the endpoint's socket cannot send to (IPv6
// from a socket bound to an IPv4 address, and the other way round) fail
// at once. When none accepts, the error lists each address tried and why
// it failed. Session.Addr is the address that accepted. When ctx ends,
// Dial returns at once, even if the resolver ignores ctx, and sends
// nothing more.
//
// As in package net, the unspecified address means this host: "0.0.0.0"
// (or "[::ffff:0:0]") is dialed at 127.0.0.1 and "[::]" at ::1. A zone
// ("[::1%lo]") on an address that is not link-local means nothing and is
// dropped. IPv6 link-local addresses (fe80::/10), which need their zone,
// are not supported: they fail at once with InvalidArgument, before
// anything is sent. So does a UDP target with an address that is not
// loopback, from an endpoint with neither WithTLS nor Insecure (see
// WithTLS).
func (ep *Endpoint) Dial(ctx context.Context, target string) (*Session, error) {
	if ep.blockingRefused() {
		return nil, errOnLoop("Dial", "dial before serving, from a handler, or from another goroutine")
	}
	if ep.state.Load() != stateOpen {
		return nil, errClosed
	}
	addrs, err := ep.resolve(ctx, target)
	if err != nil {
		return nil, err
	}
	return ep.dialResolved(ctx, target, addrs)
}

// dialResolved dials target at addrs, unless the plaintext policy refuses
// them (tls_policy.go) or ctx ended as the look-up answered: then nothing
// is sent.
func (ep *Endpoint) dialResolved(ctx context.Context, target string, addrs []netip.AddrPort) (*Session, error) {
	if err := ep.checkDialPolicy(target, addrs); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		e := contextError(ctx)
		e.Msg += fmt.Sprintf(": dial %q: nothing sent", target)
		return nil, e
	}
	return ep.dialEach(ctx, target, addrs)
}

// Dial opens a client endpoint on an ephemeral port of the transport
// target's scheme names (UDP if none) and a session to target, as
// Endpoint.Dial does: the shortest way to a client. Closing the session
// closes the endpoint. A "tcp://host:port" target opens a client-only TCP
// endpoint, whose connections use ephemeral ports. A UDP target is resolved first, and the socket is
// of the family its addresses have, or dual-stack when they have both
// (which, unlike a socket of one family, is never connected to its
// server: udp.Options.ClientOnly).
func Dial(ctx context.Context, target string, opt ...Option) (*Session, error) {
	scheme, rest := splitTarget(target)
	local := "udp://:0"
	var addrs []netip.AddrPort
	switch scheme {
	case "udp":
		var o options
		for _, f := range opt {
			f(&o)
		}
		if o.transport != nil {
			break // the endpoint's own: Endpoint.Dial resolves
		}
		var err error
		if addrs, err = resolveUDPTarget(ctx, o.resolver, target, rest); err != nil {
			return nil, err
		}
		network := familyNetwork(addrs)
		opt = append(opt[:len(opt):len(opt)], func(o *options) { o.udpNetwork = network })
	case "mem", "shm", "tcp":
		local = scheme + "://"
	default:
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: unknown transport %q (want udp://, tcp://, mem:// or shm://)", target, scheme)}
	}
	ep, err := Listen(local, opt...)
	if err != nil {
		return nil, err
	}
	var s *Session
	if addrs != nil {
		s, err = ep.dialResolved(ctx, target, addrs)
	} else {
		s, err = ep.Dial(ctx, target)
	}
	if err != nil {
		ep.Close()
		return nil, err
	}
	s.ownsEndpoint = true
	return s, nil
}

// familyNetwork is the UDP network of a socket for addrs: "udp4" or
// "udp6" when they are all of that family, else "udp" (dual-stack).
func familyNetwork(addrs []netip.AddrPort) string {
	var v4, v6 bool
	for _, a := range addrs {
		v4, v6 = v4 || a.Addr().Is4(), v6 || !a.Addr().Is4()
	}
	switch {
	case v4 && !v6:
		return "udp4"
	case v6 && !v4:
		return "udp6"
	}
	return "udp"
}

// resolve checks target and turns it into the transport's addresses, in
// the order to try them. Mistakes a hurried user makes fail here at once,
// naming the target, rather than after a connect timeout.
func (ep *Endpoint) resolve(ctx context.Context, target string) ([]netip.AddrPort, error) {
	bad := func(format string, args ...any) error {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: ", target) + fmt.Sprintf(format, args...)}
	}
	scheme, rest := splitTarget(target)
	if !strings.Contains(target, "://") {
		scheme = ep.scheme // an address of the endpoint's own transport
	}
	switch {
	case target == "":
		return nil, bad("empty target (want host:port, mem://name or shm:///path)")
	case ep.scheme != "" && scheme != ep.scheme:
		return nil, bad("this endpoint speaks %s://, not %s://: dial from an endpoint of that transport (erpc.Dial opens one)", ep.scheme, scheme)
	case rest == "":
		return nil, bad("no address after %s://", scheme)
	case ep.scheme == "udp", ep.scheme == "tcp":
		return resolveUDPTarget(ctx, ep.opts.resolver, target, rest)
	case ep.scheme == "shm":
		if _, err := os.Stat(rest); err != nil {
			return nil, &Error{Code: Unavailable, Msg: fmt.Sprintf("dial %q: no endpoint listens there: %v", target, err), Cause: err}
		}
	}
	var addr netip.AddrPort
	var err error
	if r, ok := ep.tr.(interface {
		Resolve(string) (netip.AddrPort, error)
	}); ok {
		addr, err = r.Resolve(rest)
	} else {
		addr, err = netip.ParseAddrPort(rest)
	}
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: %v", target, err), Cause: err}
	}
	return []netip.AddrPort{addr}, nil
}

// resolveUDPTarget turns a UDP target's "host:port" (rest, after any
// scheme) into addresses, each in the form the transport reports peers in
// (dialAddr), so that the engine, which takes only a packet from the
// address it dialed, knows the server's answers. r nil is
// net.DefaultResolver.
func resolveUDPTarget(ctx context.Context, r HostResolver, target, rest string) ([]netip.AddrPort, error) {
	host, portName, err := net.SplitHostPort(rest)
	if err != nil || host == "" || portName == "0" || portName == "" {
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: want host:port with a host and a nonzero port", target)}
	}
	port, err := lookupPort(ctx, portName)
	if err != nil {
		return nil, lookupError(ctx, target, "port", err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(dialAddr(ip), port)}, nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := lookupHost(ctx, r, host)
	if err != nil {
		return nil, lookupError(ctx, target, "host", err)
	}
	addrs := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		if a := netip.AddrPortFrom(dialAddr(ip), port); ip.IsValid() && !containsAddr(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, &Error{Code: Unavailable, Msg: fmt.Sprintf("dial %q: host %q has no addresses", target, host)}
	}
	return addrs, nil
}

// dialAddr is the address Dial sends to for ip, in the form the
// transport reports the peer's answers from, since the engine takes an
// answer only from the address it dialed: IPv4 never IPv4-mapped, no
// zone but a link-local address's (it means nothing on any other: the
// kernel ignores it, and answers come without it), and the unspecified
// address, which as in package net means this host, its loopback (a
// datagram to 0.0.0.0 reaches this host, but its answer comes from
// 127.0.0.1).
func dialAddr(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Zone() != "" && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() {
		ip = ip.WithZone("")
	}
	switch {
	case ip == netip.IPv4Unspecified():
		return netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case ip == netip.IPv6Unspecified():
		return netip.IPv6Loopback()
	}
	return ip
}

// lookupHost looks host up with r, returning when ctx ends even if r
// does not: a resolver that ignores its context must not hold Dial past
// its deadline. Such a look-up finishes in the background; its answer
// is dropped.
func lookupHost(ctx context.Context, r HostResolver, host string) ([]netip.Addr, error) {
	type answer struct {
		ips []netip.Addr
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ips, err := r.LookupNetIP(ctx, "ip", host)
		done <- answer{ips, err}
	}()
	select {
	case a := <-done:
		return a.ips, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func containsAddr(addrs []netip.AddrPort, a netip.AddrPort) bool {
	for _, b := range addrs {
		if a == b {
			return true
		}
	}
	return false
}

// lookupPort is a port number, or a service name's UDP port.
func lookupPort(ctx context.Context, name string) (uint16, error) {
	if n, err := strconv.ParseUint(name, 10, 16); err == nil {
		if n == 0 {
			return 0, errors.New("port 0")
		}
		return uint16(n), nil
	}
	p, err := net.DefaultResolver.LookupPort(ctx, "udp", name)
	if err == nil && (p <= 0 || p > 0xFFFF) {
		err = fmt.Errorf("port %d out of range", p)
	}
	return uint16(p), err
}

// lookupError is the error of a failed look-up: the context's if it ended,
// InvalidArgument for a port or name that does not exist (a typo),
// Unavailable for a resolver that could not answer (it may next time).
func lookupError(ctx context.Context, target, what string, err error) *Error {
	if ctx.Err() != nil {
		e := contextError(ctx)
		e.Msg += fmt.Sprintf(": dial %q: looking up the %s", target, what)
		return e
	}
	code := Unavailable
	var dnsErr *net.DNSError
	if what == "port" || errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		code = InvalidArgument
	}
	return &Error{Code: code, Msg: fmt.Sprintf("dial %q: %v", target, err), Cause: err}
}
