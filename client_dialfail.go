package erpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/erpc-go/erpc/resolver"
)

// What a Client does with targets and dials that cannot work: a target
// that can never be valid is refused by NewClient; a call fails at once,
// with the dial's own code, when every replica's last dial failed in a
// way no retry fixes by itself; and each replica's TLS handshake verifies
// the name the target gave, not the address a resolver turned it into.

// dialReasonGrace is how long a call that timed out waiting for a replica
// waits more for a dial under way to say why it failed, when none has
// yet: the first call of a new Client starts with its first dial, whose
// own failure timeout ends a moment after the call's.
const dialReasonGrace = 250 * time.Millisecond

// permanentDialCode: a dial failure no retry fixes by itself (a malformed
// target, the plaintext policy, a certificate the client does not trust
// or a server that requires TLS), as opposed to Unavailable (nothing
// answers yet, which may change).
func permanentDialCode(c Code) bool {
	return c == InvalidArgument || c == Unauthenticated || c == PermissionDenied
}

// clientTargetError refuses, with what to write instead, a target no
// Client takes: a transport a Client's replicas cannot use (tcp://), a
// URL, a scheme in upper case, a scheme no resolver serves; nil for the
// rest, which resolver.Parse checks.
func clientTargetError(target string) *Error {
	scheme, rest, ok := strings.Cut(target, "://")
	if !ok || scheme == "" {
		return nil
	}
	bad := func(format string, args ...any) *Error {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("new client %q: ", target) + fmt.Sprintf(format, args...)}
	}
	lower := strings.ToLower(scheme)
	known := func(s string) bool { return s == "udp" || s == "mem" || s == "shm" || resolver.Get(s) != nil }
	switch {
	case lower == "tcp":
		return bad("a Client's replicas are UDP, mem:// or shm:// endpoints; it does not dial TCP: "+
			"open one session to a TCP server with erpc.Dial(ctx, %q)", "tcp://"+strings.TrimPrefix(rest, "/"))
	case lower == "http" || lower == "https":
		return bad("erpc speaks its own protocol over UDP, not HTTP: " +
			"write host:port, dns:///host:port or static:///host:port,host:port")
	case lower != scheme && known(lower):
		return bad("schemes are lower case: %q", lower+"://"+rest)
	case !known(scheme):
		return bad("no resolver for the scheme %q: a Client takes host:port, udp://host:port, mem://name, shm:///path, "+
			"dns:///host:port, static:///host:port,... and the schemes of resolvers registered with resolver.Register", scheme)
	}
	return nil
}

// checkClientEntries refuses, at NewClient, the entries of a passthrough
// or static target that no dial could ever accept (the form erpc.Dial
// refuses with InvalidArgument), and literal addresses the plaintext
// policy refuses, those of a dns:/// target too; a name is left to the
// dials, which look it up.
func (ep *Endpoint) checkClientEntries(target string, t resolver.Target) *Error {
	var entries []string
	switch t.Scheme {
	case "passthrough":
		entries = []string{t.Endpoint}
	case "static":
		entries = strings.Split(t.Endpoint, ",")
	case "dns": // a literal IP, which the dns resolver gives as it is
		host, _, err := net.SplitHostPort(t.Endpoint)
		if _, perr := netip.ParseAddr(host); err != nil || perr != nil {
			return nil // a name, or an SRV name: looked up by the resolver
		}
		entries = []string{t.Endpoint}
	default:
		return nil
	}
	for _, entry := range entries {
		scheme, rest := splitTarget(entry)
		if rest == "" {
			return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("new client %q: no address after %s://", target, scheme)}
		}
		if scheme != "udp" {
			continue // mem:// and shm:// are checked by their dials
		}
		host, port, err := net.SplitHostPort(rest)
		if err == nil && host == "" {
			err = fmt.Errorf("no host")
		}
		var n uint16
		if err == nil {
			n, err = entryPort(port)
		}
		if err != nil {
			return &Error{Code: InvalidArgument, Msg: fmt.Sprintf(
				"new client %q: %q is not host:port with a host and a port from 1 to 65535 (%v)", target, entry, err)}
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			if e := ep.checkDialPolicy(target, []netip.AddrPort{netip.AddrPortFrom(dialAddr(ip), n)}); e != nil {
				e.Msg = "new client: " + e.Msg
				return e
			}
		}
	}
	return nil
}

// entryPort is the port of a Client's entry as its dials will read it
// (lookupPort: decimal, or a service name the system knows for UDP), so
// that NewClient refuses exactly the ports every dial would.
func entryPort(port string) (uint16, error) {
	if port == "" {
		return 0, errors.New("no port")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a local look-up (services file)
	defer cancel()
	return lookupPort(ctx, port)
}

// targetName is the host name in target, the name its replicas' TLS
// handshakes verify when the config names none and a replica's address
// is an IP ("dns:///db.internal:31850", "k8s:///db.prod:rpc",
// "db.internal:31850"); "" if the target names several hosts, or an IP,
// or no host:port.
func targetName(t resolver.Target) string {
	_, rest := splitTarget(t.Endpoint)
	host, _, err := net.SplitHostPort(rest)
	if err != nil || host == "" || strings.Contains(rest, ",") {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	return host
}

// tlsNameFor is the server name the TLS handshake of the replica at a
// verifies when the config names none: "" when a's host is a name (Dial
// verifies that one), else the SRV record's target if a resolver gave
// one, else the Client target's host name; with none of those, "" again:
// Dial verifies the IP.
func (c *Client) tlsNameFor(a resolver.Address) string {
	_, rest := splitTarget(a.Addr)
	if host, _, err := net.SplitHostPort(rest); err == nil {
		if _, err := netip.ParseAddr(host); err != nil {
			return ""
		}
	}
	if s := strings.TrimSuffix(a.Attrs["srv_target"], "."); s != "" {
		if _, err := netip.ParseAddr(s); err != nil {
			return s
		}
	}
	return c.tlsName
}

// renameLocked gives r the TLS name the resolver's latest word implies
// (an SRV target that changed for the same address). Its next dial
// verifies the new name; a session it has stays. Without a session, the
// failures of dials that verified the old name say nothing about the new
// one: it is dialed again at once (under c.mu).
func (c *Client) renameLocked(r *replica, name string) {
	if name == r.tlsName {
		return
	}
	r.tlsName = name
	if r.sess.Load() == nil {
		r.dialFails = 0
		r.nextDial = time.Time{}
		r.lastErr = nil
	}
}

// tlsNameKey carries, in a dial's context, the server name a Client gives
// the dial of a replica known by its IP (tlsNameFor).
type tlsNameKey struct{}

// tlsNameOf is the server name ctx carries, "" if none.
func tlsNameOf(ctx context.Context) string {
	name, _ := ctx.Value(tlsNameKey{}).(string)
	return name
}

// refusedEverywhere is the error of a call when every replica the
// resolver lists has no session and its last dial failed for good
// (permanentDialCode): the dials' code and the last one's reason. nil
// otherwise (under c.mu).
func (c *Client) refusedEverywhere(method string) *Error {
	var last *Error
	n := 0
	for _, r := range c.replicas {
		if r.removed {
			continue
		}
		if r.sess.Load() != nil || r.lastErr == nil || !permanentDialCode(r.lastErr.Code) {
			return nil
		}
		n++
		if last == nil || r.lastErr == c.dialErr {
			last = r.lastErr
		}
	}
	if n == 0 {
		return nil
	}
	return &Error{Code: last.Code, Msg: fmt.Sprintf(
		"call %q to %s: no ready replica of %d known, and each one's last dial failed in a way retrying will not fix: last dial: %v",
		method, c.target, n, last), Cause: last}
}

// dialWatch is what a call waiting for a ready replica watches: a channel
// closed at the next failed dial, and the call's error if every replica
// is refused for good already.
func (c *Client) dialWatch(method string) (<-chan struct{}, *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialNews, c.refusedEverywhere(method)
}

// noteDialFailed records replica r's failed dial and wakes the calls
// waiting (under c.mu).
func (c *Client) noteDialFailed(r *replica, err error) {
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Code: CodeOf(err), Msg: err.Error(), Cause: err}
	}
	r.lastErr = e
	c.dialErr = e
	close(c.dialNews)
	c.dialNews = make(chan struct{})
}

// awaitDialReason waits a little, at a call's timeout, for a dial under
// way to say why it failed when no dial has failed yet, so that the
// call's error gives the reason (dialReasonGrace).
func (c *Client) awaitDialReason(ctx context.Context) {
	c.mu.Lock()
	news, waiting := c.dialNews, false
	if c.dialErr == nil {
		for _, r := range c.replicas {
			waiting = waiting || r.dialing
		}
	}
	c.mu.Unlock()
	if !waiting {
		return
	}
	t := time.NewTimer(dialReasonGrace)
	defer t.Stop()
	select {
	case <-news:
	case <-t.C:
	case <-ctx.Done():
	case <-c.stop:
	}
}
