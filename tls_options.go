package erpc

import "crypto/tls"

// WithTLS makes the endpoint's sessions TLS 1.3 sessions: the handshake
// is crypto/tls's, run over erpc's datagrams, and every packet after it is
// sealed with the negotiated AEAD. cfg gives certificates, roots, server
// name, client authentication and verification, as for any crypto/tls
// connection; it must not be modified after the call. (Issue 30: in
// progress.)
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tlsConfig = cfg; o.insecure = false }
}

// Insecure makes the endpoint's sessions plaintext explicitly: packets are
// neither encrypted nor authenticated. (Issue 30: in progress.)
func Insecure() Option {
	return func(o *options) { o.insecure = true; o.tlsConfig = nil }
}
