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
// it failed. Session.Addr is the address that accepted.
func (ep *Endpoint) Dial(ctx context.Context, target string) (*Session, error) {
	if ep.onLoop() {
		return nil, errOnLoop("Dial", "dial before serving, from a Background handler, or from another goroutine")
	}
	if ep.state.Load() != stateOpen {
		return nil, errClosed
	}
	addrs, err := ep.resolve(ctx, target)
	if err != nil {
		return nil, err
	}
	return ep.dialEach(ctx, target, addrs)
}

// Dial opens a client endpoint on an ephemeral port of the transport
// target's scheme names (UDP if none; the socket is dual-stack, so it
// reaches IPv4 and IPv6 servers) and a session to target, as
// Endpoint.Dial does: the shortest way to a client. Closing the session
// closes the endpoint.
func Dial(ctx context.Context, target string, opt ...Option) (*Session, error) {
	scheme, _ := splitTarget(target)
	local := "udp://:0"
	switch scheme {
	case "udp":
	case "mem", "shm":
		local = scheme + "://"
	default:
		return nil, &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: unknown transport %q (want udp://, mem:// or shm://)", target, scheme)}
	}
	ep, err := Listen(local, opt...)
	if err != nil {
		return nil, err
	}
	s, err := ep.Dial(ctx, target)
	if err != nil {
		ep.Close()
		return nil, err
	}
	s.ownsEndpoint = true
	return s, nil
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
	case ep.scheme == "udp":
		host, port, err := net.SplitHostPort(rest)
		if err != nil || host == "" || port == "0" || port == "" {
			return nil, bad("want host:port with a host and a nonzero port")
		}
		return ep.resolveUDP(ctx, target, host, port)
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

// resolveUDP turns a UDP target's host and port into addresses, each in
// the form the transport reports peers in (an IPv4 address never
// IPv4-mapped), so that the engine, which takes only a packet from the
// address it dialed, knows the server's answers.
func (ep *Endpoint) resolveUDP(ctx context.Context, target, host, portName string) ([]netip.AddrPort, error) {
	port, err := lookupPort(ctx, portName)
	if err != nil {
		return nil, lookupError(ctx, target, "port", err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), port)}, nil
	}
	var r HostResolver = net.DefaultResolver
	if ep.opts.resolver != nil {
		r = ep.opts.resolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, lookupError(ctx, target, "host", err)
	}
	addrs := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		if a := netip.AddrPortFrom(ip.Unmap(), port); ip.IsValid() && !containsAddr(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, &Error{Code: Unavailable, Msg: fmt.Sprintf("dial %q: host %q has no addresses", target, host)}
	}
	return addrs, nil
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
