package erpc

import (
	"context"
	"crypto/tls"
	"net/netip"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/transport"
)

// PeerAuth is what is known for certain of the other end of a session:
// what its TLS handshake proved, or what the kernel says of a process of
// this host. A plaintext session over UDP or the in-memory network proves
// nothing, and its PeerAuth is zero: a peer's address (Request.Peer) is
// not an identity. Interceptors authorize with it (PeerAuthFromContext).
//
// It is taken once, when the session opens, and never changes: the
// pointers in it are shared by every request of the session and must not
// be modified.
type PeerAuth struct {
	// TLS is the session's TLS state (the peer's certificates, its
	// verified chains, the negotiated version and cipher suite), nil
	// without TLS.
	TLS *tls.ConnectionState
	// SPIFFEID is the spiffe:// URI of the peer's verified leaf
	// certificate (an X.509-SVID has exactly one URI SAN), "" if it has
	// none, or several, or its chain was not verified.
	SPIFFEID string
	// Local is the peer process's kernel credentials, for a peer of this
	// host whose transport has the kernel vouch for it (shm: SO_PEERCRED
	// when the connection was made), nil otherwise.
	Local *LocalCred
}

// LocalCred is a process's credentials as the kernel reported them.
type LocalCred struct {
	PID      int32
	UID, GID uint32
}

// PeerAuth is what is known for certain of the client that sent the
// request (see PeerAuth); zero on a spent handle, like the other
// accessors.
func (q Request) PeerAuth() PeerAuth {
	r := q.hold(spent, 0)
	if r == nil {
		return PeerAuth{}
	}
	a := r.auth
	r.release(false)
	if a == nil {
		return PeerAuth{}
	}
	return *a
}

// PeerAuthFromContext is what is known for certain of the client whose
// request, or stream, a handler's context belongs to; false for a
// context that is not a handler's (or derived from one).
func PeerAuthFromContext(ctx context.Context) (PeerAuth, bool) {
	a, ok := ctx.Value(peerAuthKey{}).(*PeerAuth)
	if !ok {
		return PeerAuth{}, false
	}
	if a == nil {
		return PeerAuth{}, true
	}
	return *a, true
}

// PeerAuth is what is known for certain of the server at the other end,
// as this client verified it when the session last opened: zero before
// it opens, and for a plaintext session over UDP or memnet.
func (s *Session) PeerAuth() PeerAuth {
	if a := s.auth.Load(); a != nil {
		return *a
	}
	return PeerAuth{}
}

type peerAuthKey struct{}

// peerAuthOf is what is known of the peer at addr of the session event
// ev opened (a server session accepted, a client session up); nil when
// nothing is, which requests of plaintext UDP sessions then carry for
// free.
func (ep *Endpoint) peerAuthOf(ev proto.Event, addr netip.AddrPort) *PeerAuth {
	var a PeerAuth
	a.TLS = ep.tlsAuthOf(ev)
	a.SPIFFEID = spiffeID(a.TLS)
	if pc, ok := ep.tr.(transport.PeerCreder); ok {
		if pid, uid, gid, ok := pc.PeerCreds(addr); ok {
			a.Local = &LocalCred{PID: pid, UID: uid, GID: gid}
		}
	}
	if a.TLS == nil && a.Local == nil {
		return nil
	}
	return &a
}

// tlsAuthOf is the TLS state of the session an event opened: the state
// of its TLS association (the event's SessionTag: a client session's own
// association, a server session's the one whose packet made it, which
// alone may reach it); nil for a plaintext session. It is taken once per
// session (one allocation then, none per call).
func (ep *Endpoint) tlsAuthOf(ev proto.Event) *tls.ConnectionState {
	return ep.tlsStateOf(ev.SessionTag)
}

// spiffeID is the SPIFFE ID of st's verified leaf: its one URI SAN, if
// that is a spiffe:// URI.
func spiffeID(st *tls.ConnectionState) string {
	if st == nil || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return ""
	}
	uris := st.VerifiedChains[0][0].URIs
	if len(uris) != 1 || uris[0].Scheme != "spiffe" || uris[0].Host == "" {
		return ""
	}
	return uris[0].String()
}

// sessionOpened records what is known of the peer of a session that
// just opened: a server session's, for its requests (peerAuths), a
// client session's, for Session.PeerAuth. On the loop.
func (ep *Endpoint) sessionOpened(ev proto.Event, s *Session, server bool) {
	if server {
		s = nil
	}
	a := ep.peerAuthOf(ev, ev.Peer)
	switch {
	case !server && s != nil:
		s.auth.Store(a)
	case server && a != nil:
		if ep.loop.peerAuths == nil {
			ep.loop.peerAuths = make(map[proto.SessionID]*PeerAuth)
		}
		ep.loop.peerAuths[ev.Session] = a
	}
}

// peerAuthFor is what a request of server session id carries: no map
// look-up at all while no session has anything to say.
func (ep *Endpoint) peerAuthFor(id proto.SessionID) *PeerAuth {
	if ep.loop.peerAuths == nil {
		return nil
	}
	return ep.loop.peerAuths[id]
}
