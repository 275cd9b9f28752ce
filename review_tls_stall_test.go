package erpc_test

import (
	"context"
	"crypto/tls"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// gate blocks a user callback while armed, and says when one is blocked.
type gate struct {
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1), release: make(chan struct{})} }

func (g *gate) pass() {
	if !g.armed.Load() {
		return
	}
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.release
}

// blockingCache is a ClientSessionCache (a user callback crypto/tls
// calls during a handshake) whose Get and Put wait at gates.
type blockingCache struct {
	tls.ClientSessionCache
	get, put *gate
}

func (c *blockingCache) Get(key string) (*tls.ClientSessionState, bool) {
	c.get.pass()
	return c.ClientSessionCache.Get(key)
}

func (c *blockingCache) Put(key string, cs *tls.ClientSessionState) {
	c.put.pass()
	c.ClientSessionCache.Put(key, cs)
}

// TestReviewTLSCallbackStallsLoop: promise (issue 30, tls_async.go):
// handshake work, the user's callbacks included, never stalls the event
// loop for other sessions. An endpoint has a live TLS session s1; then a
// second handshake (another client, or another dial of the same client)
// reaches a user callback of the tls.Config that takes long (here: it
// waits until the test releases it, at most 6 s), and s1 makes a call
// with a 3 s deadline. The call must complete while the callback waits.
// Three callbacks run on the loop instead of a handshake goroutine: the
// server's WrapSession (it seals the ticket tlsProgress sends when a
// handshake completes: any remote client triggers it), the client's
// ClientSessionCache.Get (the ClientHello is built on the loop, in
// Session.connect) and its Put (the ticket is taken on the loop).
func TestReviewTLSCallbackStallsLoop(t *testing.T) {
	for _, which := range []string{"server-WrapSession", "client-ClientSessionCache.Get", "client-ClientSessionCache.Put"} {
		t.Run(which, func(t *testing.T) {
			pki := newTestPKI(t)
			g := newGate()
			defer func() {
				select {
				case <-g.release:
				default:
					close(g.release)
				}
			}()
			go func() {
				time.Sleep(6 * time.Second)
				select {
				case <-g.release:
				default:
					close(g.release)
				}
			}()
			scfg := pki.serverTLS()
			if which == "server-WrapSession" {
				base := scfg
				scfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
					g.pass()
					return base.EncryptTicket(cs, ss)
				}
			}
			ccfg := pki.clientTLS()
			cache := &blockingCache{ClientSessionCache: tls.NewLRUClientSessionCache(8), get: newGate(), put: newGate()}
			switch which {
			case "client-ClientSessionCache.Get":
				cache.get = g
			case "client-ClientSessionCache.Put":
				cache.put = g
			}
			ccfg.ClientSessionCache = cache
			sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(scfg))
			cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(ccfg))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s1, err := cep.Dial(ctx, sep.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer s1.Close()
			if _, err := s1.Call(ctx, "Echo", []byte("warm"), nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // s1's ticket has been issued and stored

			g.armed.Store(true)
			dialer := cep
			if which == "server-WrapSession" { // another client: any remote peer
				dialer = listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))
			}
			go func() {
				s2, err := dialer.Dial(ctx, sep.Addr().String())
				if err == nil {
					s2.Close()
				}
			}()
			select {
			case <-g.entered:
			case <-time.After(5 * time.Second):
				t.Fatalf("the %s callback was never reached: the fault did not happen", which)
			}
			cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err = s1.Call(cctx, "Echo", []byte("meanwhile"), nil)
			ccancel()
			if err != nil {
				t.Fatalf("while another handshake's %s callback waited, the live session's call failed: %v "+
					"(the callback runs on the event loop and stalls every session of the endpoint)", which, err)
			}
		})
	}
}
