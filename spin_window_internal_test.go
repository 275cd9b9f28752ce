package erpc

import (
	"context"
	"testing"
	"time"
)

// TestSpinWindowIgnoresOwnWork: a server whose Background handler takes
// 2 ms parks while it runs, and the handler's response (a command and a
// Wake) ends the park. That is the application's time, which no spin
// shortens: the window must not grow on it. Before, every such park
// doubled the window, and a replica serving a request every few
// milliseconds spun a millisecond after each (erpc-bench fleet: p50 7-13
// ms against gRPC's 1.4-1.7 ms). The client waits 3 ms between calls, longer
// than the longest window, so no request comes while a spin would catch
// it either. Over loopback UDP.
func TestSpinWindowIgnoresOwnWork(t *testing.T) {
	srv := NewServer()
	if err := srv.Handle("Wait", func(ctx context.Context, req []byte) ([]byte, error) {
		time.Sleep(2 * time.Millisecond)
		return req, nil
	}, Background()); err != nil {
		t.Fatal(err)
	}
	sep, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	cep, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const calls = 12
	for range calls {
		if _, err := s.Call(ctx, "Wait", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Millisecond)
	}
	var w spinWindow
	done := make(chan struct{})
	if err := sep.Post(func() { w = sep.loop.spin; close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	if w.localWakes < calls/2 {
		t.Fatalf("the handler's response ended %d of %d parks: the test exercised nothing", w.localWakes, calls)
	}
	if w.cur != w.lo {
		t.Fatalf("window %v after %d parks that the server's own handler ended, want %v", w.cur, w.localWakes, w.lo)
	}
}
