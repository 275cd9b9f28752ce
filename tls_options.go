package erpc

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/erpc-go/erpc/internal/secure"
)

// WithTLS makes the endpoint's sessions TLS 1.3 sessions, both the ones
// it dials and the ones it serves: the handshake is crypto/tls's (through
// its QUIC interface), run over erpc's own datagrams, and every packet
// after it is sealed with the negotiated AEAD (AES-128-GCM or
// AES-256-GCM; internal/seal's doc has the format). cfg gives
// certificates, roots, the server name (Dial uses the target's host when
// it is empty; a Client's replica that its resolver gives as an IP uses
// the SRV record's target or the Client target's host name), client authentication (ClientAuth, ClientCAs) and custom
// verification, as for any crypto/tls connection; it is cloned, so later
// changes to it do not count. Its NextProtos must be empty or include
// erpc's ALPN, "erpc/1": both sides require it. A Listen or Dial whose
// cfg is nil, or names other protocols only, fails with InvalidArgument;
// so does a Server.Listen whose cfg has no certificate (Certificates,
// GetCertificate or GetConfigForClient), or a Certificates entry without
// its certificate bytes or private key.
//
// What it protects: every erpc packet after the handshake, header and
// payload, is encrypted and authenticated, under keys only the two ends
// have; the short outer header (an association ID, a packet number, the
// level and key phase) is authenticated, not encrypted. A packet that
// fails to open (forged, corrupted, replayed, under a key given up) is
// dropped, counted (Stats.TLSOpenFailures, TLSReplays) and never
// answered; a server session answers only the association that made it
// (Stats.DropWrongTag). Resets, NACKs and connect-acks are sealed like
// the rest. What it does not: traffic analysis (who talks to whom, the
// sizes and timing of packets), denial of service by whoever can drop or
// forge packets on the path (a forged refusal can make a dial fail, never
// make it plaintext), and a compromised host.
//
// A handshake that fails (an untrusted or misnamed certificate, a client
// certificate missing or untrusted under RequireAndVerifyClientCert, a
// peer without TLS) fails Dial within about a round trip with
// Unauthenticated, naming the reason; the peer is told with the TLS
// alert. Keys are updated every 2^22 packets. Session resumption is
// crypto/tls's: with a ClientSessionCache in the client's cfg, the next
// handshake to a server that sent a ticket resumes (the server sends one
// per session unless SessionTicketsDisabled). 0-RTT is not supported.
//
// cfg's callbacks (VerifyPeerCertificate, VerifyConnection,
// GetCertificate, GetClientCertificate, GetConfigForClient, WrapSession,
// UnwrapSession, the ClientSessionCache) run off the event loop: one that
// blocks delays its own handshake, or the storing of its ticket, and no
// other session. One that panics fails its handshake, and is logged with
// the endpoint's logger; the endpoint runs on (a dial whose own callback
// panicked fails with Unauthenticated naming the panic; its peer is told
// with a TLS alert). Under floods a server keeps bounded state and answers an address
// it has not validated with at most three times what it received (README,
// Security).
//
// WithTLS or Insecure is required to serve on an address other hosts can
// reach (a wildcard, "0.0.0.0:p", "[::]:p" or ":p", an interface's
// address, or a name with such an address) and to dial an address of
// another host; without either, Server.Listen and Dial fail with
// InvalidArgument naming both (tls_policy.go). Loopback, mem:// and shm://
// need neither. The choice is the endpoint's, for all its sessions: on a
// wildcard, WithTLS makes sessions with loopback peers TLS too. The
// policy applies to udp:// and tcp:// addresses alike; IPv4 link-local
// addresses (169.254/16) are other hosts, as any non-loopback address.
//
// WithTLS and Insecure exclude each other: when both are given, the last
// one wins (options apply in order).
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tlsConfig = cfg; o.insecure = false; o.tlsSet = true }
}

// Insecure makes the endpoint's sessions plaintext explicitly: packets are
// neither encrypted nor authenticated. It is what lets an endpoint serve
// plaintext on an address other hosts can reach, or dial another host in
// plaintext (see WithTLS): on a wildcard listen ("0.0.0.0:p", "[::]:p",
// ":p") every session is plaintext, whichever interface its peer comes
// from. Use it on networks you trust, or inside an encrypted overlay.
func Insecure() Option {
	return func(o *options) { o.insecure = true; o.tlsConfig = nil; o.tlsSet = false }
}

// checkTLS checks WithTLS's config and keeps the clone sessions use.
func (o *options) checkTLS() *Error {
	if !o.tlsSet {
		return nil
	}
	if o.tlsConfig == nil {
		return errTLSConfig(errors.New("a nil *tls.Config"))
	}
	c, err := secure.CheckConfig(o.tlsConfig)
	if err != nil {
		return errTLSConfig(err)
	}
	o.tlsConfig = c
	return nil
}

// checkServerTLS refuses a serving endpoint's TLS config with no
// certificate to present (no Certificates, GetCertificate or
// GetConfigForClient), or a Certificates entry without certificate bytes
// or private key: every handshake would fail, and its clients would be
// told only "unrecognized name". A client-only endpoint needs none.
func checkServerTLS(addr string, srv *Server, o *options) *Error {
	c := o.tlsConfig
	if srv == nil || c == nil {
		return nil
	}
	for i, cert := range c.Certificates { // a handshake that picked it would fail
		if len(cert.Certificate) == 0 || cert.PrivateKey == nil {
			return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("serve on %q: WithTLS: the tls.Config's Certificates[%d] "+
				"has no certificate bytes or no private key (load one with tls.LoadX509KeyPair or tls.X509KeyPair)", addr, i)}
		}
	}
	if len(c.Certificates) > 0 || c.GetCertificate != nil || c.GetConfigForClient != nil {
		return nil
	}
	return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("serve on %q: WithTLS: a server's tls.Config needs a certificate "+
		"(Certificates, GetCertificate or GetConfigForClient): with none, every handshake would fail", addr)}
}
