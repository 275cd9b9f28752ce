package erpc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// dialAttempt is one address Dial tries.
type dialAttempt struct {
	addr netip.AddrPort
	sess *Session // nil until started
	err  *Error   // why it failed; nil while it runs, or if it never started
}

// dialEach connects to the first of addrs to accept a session, as
// Endpoint.Dial describes: one at a time, the next starting when the last
// failed or attemptDelay after it started. Every attempt is a session of
// its own; the losers are closed.
func (ep *Endpoint) dialEach(ctx context.Context, target string, addrs []netip.AddrPort) (*Session, error) {
	atts := make([]dialAttempt, len(addrs))
	for i, a := range addrs {
		atts[i].addr = a
	}
	ended := make(chan int, len(atts)) // attempts whose first connect succeeded or failed
	stop := make(chan struct{})
	defer close(stop)
	delay := time.NewTimer(attemptDelay)
	defer delay.Stop()
	next, running, launch := 0, 0, true
	for {
		// No attempt starts once ctx has ended: the select below ends
		// the dial, and with nothing started nothing was sent.
		for (launch || running == 0) && next < len(atts) && ctx.Err() == nil {
			launch = false
			if ep.startAttempt(&atts[next], next, ended, stop, target, tlsNameOf(ctx)) {
				running++
				delay.Reset(attemptDelay)
			} else {
				launch = true // it failed at once: the next starts now
			}
			next++
		}
		if running == 0 && ctx.Err() == nil {
			return nil, dialError(target, atts)
		}
		select {
		case i := <-ended:
			running--
			a := &atts[i]
			if a.sess.firstErr == nil {
				abandon(atts, i)
				return a.sess, nil
			}
			a.err = a.sess.firstErr
			launch = true
		case <-delay.C:
			launch = true
		case <-ctx.Done():
			e := contextError(ctx)
			e.Msg += fmt.Sprintf(": dial %q", target)
			if next > 0 {
				e.Msg += ": " + tried(target, atts)
			}
			abandon(atts, -1) // after tried: closing fails what still runs
			return nil, e
		}
	}
}

// reaches says whether the endpoint's transport can send to a, when the
// transport says (udp.Transport.Reaches).
func (ep *Endpoint) reaches(a netip.Addr) bool {
	r, ok := ep.tr.(interface{ Reaches(netip.Addr) bool })
	return !ok || r.Reaches(a)
}

// startAttempt opens a session to a.addr; false if it failed at once,
// because the endpoint cannot dial that address (unsendable).
// When the session is up or has failed, its index goes to ended. tlsName
// is the server name its TLS handshakes verify if not target's host (a
// Client's replica known by its IP: tlsNameFor).
func (ep *Endpoint) startAttempt(a *dialAttempt, i int, ended chan<- int, stop <-chan struct{}, target, tlsName string) bool {
	if a.err = ep.unsendable(a.addr.Addr()); a.err != nil {
		return false
	}
	s := &Session{ep: ep, target: target, tlsName: tlsName, addr: a.addr, first: make(chan struct{})}
	a.sess = s
	ep.post(command{kind: cmdDial, sess: s})
	go func() {
		select {
		case <-s.first:
			ended <- i
		case <-stop:
		}
	}()
	return true
}

// unsendable says why the endpoint cannot dial a, or nil if it can.
func (ep *Endpoint) unsendable(a netip.Addr) *Error {
	if ep.scheme == "udp" && a.Is6() && a.IsLinkLocalUnicast() {
		// The transport reports peers without a zone, so a session to a
		// link-local address would never hear its answers.
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf(
			"%s is an IPv6 link-local address (fe80::/10), which erpc does not support: dial a global, unique-local or loopback address", a)}
	}
	if !ep.reaches(a) {
		family := "IPv6"
		if a.Is4() {
			family = "IPv4"
		}
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf(
			"this endpoint's socket (%s) cannot send to %s addresses (listen on :0 or [::] for both families)",
			ep.tr.LocalAddr(), family)}
	}
	return nil
}

// abandon closes the sessions of the attempts other than atts[keep].
func abandon(atts []dialAttempt, keep int) {
	for j := range atts {
		if j != keep && atts[j].sess != nil {
			atts[j].sess.Close()
		}
	}
}

// dialError is the error of a dial none of whose addresses accepted: what
// was tried and how each failed. Its code is the first failure's in the
// network (Unavailable), or InvalidArgument when no address could even be
// tried from this endpoint's socket.
func dialError(target string, atts []dialAttempt) *Error {
	e := &Error{Code: InvalidArgument, Msg: fmt.Sprintf("dial %q: %s", target, tried(target, atts))}
	var causes []error
	for _, a := range atts {
		if a.err == nil {
			continue
		}
		if e.Code == InvalidArgument {
			e.Code = a.err.Code
		}
		if a.err.Cause != nil {
			causes = append(causes, a.err.Cause)
		}
	}
	if len(causes) == 1 {
		e.Cause = causes[0]
	} else if len(causes) > 1 {
		e.Cause = errors.Join(causes...)
	}
	return e
}

// tried says what became of each attempt. A target that is its one
// address literally needs no address repeated.
func tried(target string, atts []dialAttempt) string {
	if len(atts) == 1 && strings.HasSuffix(target, atts[0].addr.String()) {
		return outcome(&atts[0])
	}
	var b strings.Builder
	if len(atts) == 1 {
		b.WriteString("tried ")
	} else {
		fmt.Fprintf(&b, "tried %d addresses: ", len(atts))
	}
	for i := range atts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", atts[i].addr, outcome(&atts[i]))
	}
	return b.String()
}

func outcome(a *dialAttempt) string {
	switch {
	case a.err != nil:
		return a.err.Msg
	case a.sess == nil:
		return "not tried yet"
	}
	select {
	case <-a.sess.first: // ended as the dial did
		if a.sess.firstErr != nil {
			return a.sess.firstErr.Msg
		}
	default:
	}
	return "no answer yet"
}
