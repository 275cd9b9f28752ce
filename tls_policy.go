package erpc

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// The plaintext policy (issue 30): a session that could leave the host is
// never plaintext by accident. A UDP or TCP endpoint that serves on an
// address other hosts can reach, and a dial to an address of another host, need
// WithTLS or Insecure; mem://, shm:// and loopback need neither, since
// their packets never leave the host. The refusal is InvalidArgument, not
// FailedPrecondition: it follows from the call's arguments alone (the
// address and the options), whatever the state of the system, and the
// same call fails the same way every time.

// policyLookupTimeout bounds the look-up of a host name Server.Listen is
// given (Listen takes no context).
const policyLookupTimeout = 5 * time.Second

// checkServePolicy is the policy for a serving endpoint opened on addr
// (Server.Listen). A client-only endpoint (Listen) accepts no sessions,
// so only its dials are checked (checkDialPolicy); nor is an endpoint on
// a transport of the caller's own (WithTransport), which was built for
// the purpose, checked here.
func checkServePolicy(addr string, srv *Server, o *options) *Error {
	if srv == nil || o.transport != nil || o.tlsConfig != nil || o.insecure {
		return nil
	}
	scheme, rest := splitTarget(addr)
	if scheme != "udp" && scheme != "tcp" {
		return nil
	}
	host, _, err := net.SplitHostPort(rest)
	if err != nil {
		return nil // not an address: opening the transport says why
	}
	if hostStaysLocal(host, o.resolver) {
		return nil
	}
	what := "all interfaces, reachable from other hosts"
	if host != "" {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.IsUnspecified() {
			what = "an address other hosts can reach"
		}
	}
	return plaintextError(fmt.Sprintf("serve on %q", addr), what)
}

// checkDialPolicy is the policy for a dial of target at addrs (already
// resolved): every address must be loopback unless the endpoint has
// WithTLS or Insecure.
func (ep *Endpoint) checkDialPolicy(target string, addrs []netip.AddrPort) *Error {
	if (ep.scheme != "udp" && ep.scheme != "tcp") || ep.opts.tlsConfig != nil || ep.opts.insecure {
		return nil
	}
	for _, a := range addrs {
		// IPv4 link-local (169.254/16) is another host on the link, as any
		// non-loopback address is. IPv6 link-local over UDP is left to
		// unsendable, which refuses it before anything is sent whatever
		// the options, and says why more precisely.
		ip := a.Addr().Unmap()
		if ip.IsLoopback() || (ep.scheme == "udp" && ip.Is6() && ip.IsLinkLocalUnicast()) {
			continue
		}
		return plaintextError(fmt.Sprintf("dial %q", target), fmt.Sprintf("%v is not a loopback address", a.Addr()))
	}
	return nil
}

// hostStaysLocal says whether a UDP or TCP host to listen on reaches this host
// only: "localhost", a loopback address, or a name whose addresses are
// all loopback (looked up with r, WithResolver's; nil is
// net.DefaultResolver). The wildcard ("", "0.0.0.0", "::") does not. A name that
// cannot be looked up passes: opening the transport then fails, with the
// look-up's error, which says more than the policy could.
func hostStaysLocal(host string, r HostResolver) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback()
	}
	ctx, cancel := context.WithTimeout(context.Background(), policyLookupTimeout)
	defer cancel()
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return true
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}

// plaintextError is the policy's refusal: what was asked, why it could
// leave the host, and the two ways out.
func plaintextError(op, why string) *Error {
	return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("%s: %s, and sessions there would be plaintext: "+
		"pass erpc.WithTLS(cfg) to encrypt and authenticate them, or erpc.Insecure() to run plaintext on purpose "+
		"(only loopback, mem:// and shm:// need neither)", op, why)}
}
