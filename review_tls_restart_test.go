package erpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"
)

// muteable wraps a transport; once muted it sends nothing (a process
// that died without a word).
type muteable struct {
	transport.Transport
	muted atomic.Bool
	lost  atomic.Int64
}

func (m *muteable) PacketSize() int { return m.Transport.(transport.PacketSizer).PacketSize() }
func (m *muteable) Target() string  { return m.Transport.(transport.Targeter).Target() }
func (m *muteable) Send(msgs []transport.Message) error {
	if m.muted.Load() {
		m.lost.Add(int64(len(msgs)))
		return nil
	}
	return m.Transport.Send(msgs)
}

// TestReviewTLSServerRestart: a TLS client has a session, with one call
// whose handler is running, when the server process dies (its socket
// says nothing more) and a new one starts on the same port. Promises:
// at most once and NotExecuted never lies (the running call must not be
// reported as never run), and the session recovers: later calls reach
// the new server and run once each.
func TestReviewTLSServerRestart(t *testing.T) {
	pki := newTestPKI(t)
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	mk := func() *erpc.Server {
		srv := erpc.NewServer()
		must(t, srv.Handle("Once", func(_ context.Context, req []byte) ([]byte, error) {
			mu.Lock()
			runs[string(req)]++
			mu.Unlock()
			if string(req) == "blocked" {
				started <- struct{}{}
				<-stop
			}
			return req, nil
		}, erpc.Background()))
		return srv
	}
	u, err := udp.Listen("127.0.0.1:0", udp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Target()[len("udp://"):]
	m := &muteable{Transport: u}
	epA, err := mk().Listen("", erpc.WithTransport(m), erpc.WithTLS(pki.serverTLS()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { epA.Close() })
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Call(ctx, "Once", []byte("first"), nil); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { _, err := s.Call(ctx, "Once", []byte("blocked"), nil); res <- err }()
	<-started
	m.muted.Store(true) // the process dies: nothing more leaves it
	_ = u.Close()       // and its port is free (epA itself ends at cleanup: its handler still blocks)
	epB := listenT(t, mk(), addr, erpc.WithTLS(pki.serverTLS()))

	err = <-res
	t.Logf("the call whose handler was running when the server died: %v (NotExecuted %v)", err, erpc.NotExecuted(err))
	if err == nil || erpc.NotExecuted(err) {
		t.Fatalf("the call that ran on the dead server ended with %v, NotExecuted %v: want an error that may have run", err, erpc.NotExecuted(err))
	}
	var lastErr error
	for i := range 20 {
		req := []byte{'a', byte(i)}
		_, err := s.Call(ctx, "Once", req, nil)
		mu.Lock()
		n := runs[string(req)]
		mu.Unlock()
		if err == nil {
			lastErr = nil
			break
		}
		lastErr = err
		if erpc.NotExecuted(err) && n != 0 {
			t.Fatalf("call %q failed as NotExecuted (%v) but ran %d time(s)", req, err, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("the session never reached the restarted server: %v; new server %+v", lastErr, epB.Stats())
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range runs {
		if n != 1 {
			t.Errorf("request %q ran %d times", k, n)
		}
	}
	st := epB.Stats()
	t.Logf("new server: unknown-association drops %d, handshakes %d", st.TLSUnknownAssoc, st.TLSHandshakes)
	if st.TLSUnknownAssoc == 0 {
		t.Fatalf("the old session's packets never reached the new server: the restart did not happen as meant")
	}
}
