package erpc_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestTLSForceKeyUpdateOncePerFlush: the ForceKeyUpdate test hook updates
// an association's sending key once in the next flush, however many
// packets that flush seals (it updated once per packet). The hook is set
// on the server while a handler holds its answer, so the next flush is
// the answer's, dozens of packets; the server's count of key updates (it
// sends; the client does not update) must grow by one per hook.
func TestTLSForceKeyUpdateOncePerFlush(t *testing.T) {
	pki := newTestPKI(t)
	entered, release := make(chan struct{}), make(chan struct{})
	resp := bytes.Repeat([]byte("k"), 60000)
	sep := listenT(t, serverWith(t, "Hold", func(_ context.Context, _ []byte) ([]byte, error) {
		entered <- struct{}{}
		<-release
		return resp, nil
	}, erpc.Background()), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const hooks = 5
	before := sep.Stats().TLSKeyUpdates
	for range hooks {
		done := make(chan error, 1)
		go func() {
			got, err := s.Call(ctx, "Hold", []byte("x"), nil)
			if err == nil && !bytes.Equal(got, resp) {
				err = context.Canceled
			}
			done <- err
		}()
		<-entered
		time.Sleep(100 * time.Millisecond) // the request's acks are out: the server has nothing to send
		if err := erpc.ForceKeyUpdate(sep); err != nil {
			t.Fatal(err)
		}
		release <- struct{}{}
		if err := <-done; err != nil {
			t.Fatalf("call after a forced key update: %v", err)
		}
	}
	if got := sep.Stats().TLSKeyUpdates - before; got != hooks {
		t.Fatalf("%d forced key updates, each followed by a many-packet answer: the server counted %d key updates, want %d", hooks, got, hooks)
	}
}
