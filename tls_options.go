package erpc

import "crypto/tls"

// WithTLS makes the endpoint's sessions TLS 1.3 sessions: the handshake
// is crypto/tls's, run over erpc's datagrams, and every packet after it is
// sealed with the negotiated AEAD. cfg gives certificates, roots, server
// name, client authentication and verification, as for any crypto/tls
// connection; it must not be modified after the call. (Issue 30: in
// progress.)
//
// WithTLS or Insecure is required to serve on an address other hosts can
// reach (a wildcard, "0.0.0.0:p", "[::]:p" or ":p", an interface's
// address, or a name with such an address) and to dial an address of
// another host; without either, Server.Listen and Dial fail with
// InvalidArgument naming both (tls_policy.go). Loopback, mem:// and shm://
// need neither. The choice is the endpoint's, for all its sessions: on a
// wildcard, WithTLS makes sessions with loopback peers TLS too.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tlsConfig = cfg; o.insecure = false }
}

// Insecure makes the endpoint's sessions plaintext explicitly: packets are
// neither encrypted nor authenticated. It is what lets an endpoint serve
// plaintext on an address other hosts can reach, or dial another host in
// plaintext (see WithTLS): on a wildcard listen ("0.0.0.0:p", "[::]:p",
// ":p") every session is plaintext, whichever interface its peer comes
// from. Use it on networks you trust, or inside an encrypted overlay.
// (Issue 30: in progress.)
func Insecure() Option {
	return func(o *options) { o.insecure = true; o.tlsConfig = nil }
}
