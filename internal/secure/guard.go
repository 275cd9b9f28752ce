package secure

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// PanicFunc is told of a panic recovered in a tls.Config callback: which
// callback, and the value it panicked with.
type PanicFunc func(callback string, value any)

// Guard returns a clone of cfg whose callbacks recover their panics.
// crypto/tls calls them on a goroutine of its own (QUICConn's handshake),
// where nothing recovers: one panicking callback would end the process,
// every session of every endpoint in it. A recovered panic fails that
// handshake with an error naming it (callbacks that return no error
// answer as if they had nothing: no session to resume, no ticket kept)
// and is reported to onPanic once.
func Guard(cfg *tls.Config, onPanic PanicFunc) *tls.Config {
	c := cfg.Clone()
	g := guard(onPanic)
	if f := c.GetCertificate; f != nil {
		c.GetCertificate = func(h *tls.ClientHelloInfo) (cert *tls.Certificate, err error) {
			defer g.recover("GetCertificate", &err)
			return f(h)
		}
	}
	if f := c.GetClientCertificate; f != nil {
		c.GetClientCertificate = func(r *tls.CertificateRequestInfo) (cert *tls.Certificate, err error) {
			defer g.recover("GetClientCertificate", &err)
			return f(r)
		}
	}
	if f := c.GetConfigForClient; f != nil {
		c.GetConfigForClient = func(h *tls.ClientHelloInfo) (out *tls.Config, err error) {
			defer g.recover("GetConfigForClient", &err)
			if out, err = f(h); out != nil && err == nil {
				// The callback's config gets what WithTLS's got: erpc's
				// ALPN when it names none, TLS 1.3 only.
				if out, err = CheckConfig(out); err != nil {
					return nil, fmt.Errorf("the config GetConfigForClient returned: %w", err)
				}
				out = Guard(out, onPanic)
			}
			return out, err
		}
	}
	if f := c.VerifyPeerCertificate; f != nil {
		c.VerifyPeerCertificate = func(raw [][]byte, chains [][]*x509.Certificate) (err error) {
			defer g.recover("VerifyPeerCertificate", &err)
			return f(raw, chains)
		}
	}
	if f := c.VerifyConnection; f != nil {
		c.VerifyConnection = func(st tls.ConnectionState) (err error) {
			defer g.recover("VerifyConnection", &err)
			return f(st)
		}
	}
	if f := c.WrapSession; f != nil {
		c.WrapSession = func(st tls.ConnectionState, s *tls.SessionState) (b []byte, err error) {
			defer g.recover("WrapSession", &err)
			return f(st, s)
		}
	}
	if f := c.UnwrapSession; f != nil {
		c.UnwrapSession = func(id []byte, st tls.ConnectionState) (s *tls.SessionState, err error) {
			defer g.recover("UnwrapSession", &err)
			return f(id, st)
		}
	}
	if cache := c.ClientSessionCache; cache != nil {
		c.ClientSessionCache = guardedCache{cache, g}
	}
	return c
}

type guard PanicFunc

// recover, deferred, turns a panic into *err and reports it.
func (g guard) recover(callback string, err *error) {
	p := recover()
	if p == nil {
		return
	}
	if g != nil {
		g(callback, p)
	}
	if err != nil {
		*err = fmt.Errorf("the tls.Config's %s panicked: %v", callback, p)
	}
}

// guardedCache is a ClientSessionCache whose panics are recovered: a Get
// that panics finds nothing, a Put that panics keeps nothing.
type guardedCache struct {
	tls.ClientSessionCache
	g guard
}

func (c guardedCache) Get(key string) (s *tls.ClientSessionState, ok bool) {
	defer c.g.recover("ClientSessionCache.Get", nil)
	return c.ClientSessionCache.Get(key)
}

func (c guardedCache) Put(key string, s *tls.ClientSessionState) {
	defer c.g.recover("ClientSessionCache.Put", nil)
	c.ClientSessionCache.Put(key, s)
}
