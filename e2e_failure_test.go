package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	_ "github.com/erpc-go/erpc/codec/protocodec"
	"github.com/erpc-go/erpc/internal/faults"
)

// TestDeadlineAndCancel: a call whose context ends fails with the matching
// code at once, and the server's handler sees its context canceled.
func TestDeadlineAndCancel(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	canceled := make(chan struct{}, 4)
	h := erpc.NewServer()
	h.Handle("Echo", echoHandler)
	h.Handle("Wait", func(ctx context.Context, req []byte) ([]byte, error) {
		select {
		case <-ctx.Done():
			canceled <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return req, nil
		}
	}, erpc.Background())
	srv := n.Listen(t, h)
	s := dialT(t, n, n.Listen(t, nil), srv)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Call(ctx, "Wait", []byte("x"), nil)
	if !errors.Is(err, context.DeadlineExceeded) || erpc.CodeOf(err) != erpc.DeadlineExceeded {
		t.Fatalf("deadline: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("deadline of 30ms returned after %v", d)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(30 * time.Millisecond); cancel2() }()
	if _, err := s.Call(ctx2, "Wait", []byte("y"), nil); !errors.Is(err, context.Canceled) || erpc.CodeOf(err) != erpc.Canceled {
		t.Fatalf("cancel: %v", err)
	}
	for i := range 2 {
		select {
		case <-canceled:
		case <-time.After(5 * time.Second):
			t.Fatalf("server handler %d never saw its context canceled", i)
		}
	}
	// The session is still usable.
	if resp, err := call(t, s, "Echo", []byte("ok")); err != nil || string(resp) != "ok" {
		t.Fatalf("after cancellations: %q %v", resp, err)
	}
}

// TestServerStoppedAndRestarted: a server that stops makes pending calls
// fail with Unavailable within the failure timeout; restarted on the same
// address, it serves new calls on the same session.
func TestServerStoppedAndRestarted(t *testing.T) {
	checkLeaks(t)
	srv, err := serverWith(t, "Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, erpc.Background()).Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	const failure = 300 * time.Millisecond
	cli := udpNet{}.Listen(t, nil, erpc.WithFailureTimeout(failure))
	s, err := cli.Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "Slow", []byte("x"), nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	// Stop the server without telling anyone: its socket just goes away.
	stopped := time.Now()
	srv.Close()
	select {
	case err := <-done:
		if !errors.Is(err, erpc.ErrUnavailable) {
			t.Fatalf("pending call: %v, want Unavailable", err)
		}
		if d := time.Since(stopped); d > failure+time.Second {
			t.Fatalf("pending call failed %v after the server stopped; failure timeout %v", d, failure)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending call never failed")
	}

	srv2, err := serverWith(t, "Echo", echoHandler).Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if resp, err := call(t, s, "Echo", []byte("hello again")); err != nil || string(resp) != "hello again" {
		t.Fatalf("first call after the restart: %q %v", resp, err)
	}
}

// TestRestartWithoutPendingCalls: the server restarts while the session is
// idle; the next call provably never reached the old server, so it goes
// out again on a new session and succeeds.
func TestRestartWithoutPendingCalls(t *testing.T) {
	checkLeaks(t)
	h := serverWith(t, "Echo", echoHandler)
	srv, err := h.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	s := dialT(t, udpNet{}, udpNet{}.Listen(t, nil), srv)
	if _, err := call(t, s, "Echo", []byte("1")); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	srv2, err := h.Listen(addr) // one Server serves its restarted endpoint too
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	if resp, err := call(t, s, "Echo", []byte("2")); err != nil || string(resp) != "2" {
		t.Fatalf("call after an unseen restart: %q %v", resp, err)
	}
}

// TestOverloadFailsFast: one worker and a queue of one: of many concurrent
// slow calls, the ones that find the queue full fail at once with
// ResourceExhausted, and the others succeed.
func TestOverloadFailsFast(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	srv := n.Listen(t, serverWith(t, "Slow", func(_ context.Context, req []byte) ([]byte, error) {
		time.Sleep(100 * time.Millisecond)
		return req, nil
	}, erpc.Background()), erpc.WithWorkers(1), erpc.WithQueueDepth(1))
	s := dialT(t, n, n.Listen(t, nil), srv)
	var wg sync.WaitGroup
	var ok, exhausted atomic.Int32
	var fastest atomic.Int64
	fastest.Store(int64(time.Hour))
	for range 8 {
		wg.Go(func() {
			start := time.Now()
			_, err := call(t, s, "Slow", []byte("x"))
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, erpc.ErrResourceExhausted):
				exhausted.Add(1)
				if d := int64(time.Since(start)); d < fastest.Load() {
					fastest.Store(d)
				}
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() < 2 || exhausted.Load() == 0 || ok.Load()+exhausted.Load() != 8 {
		t.Fatalf("%d ok, %d exhausted", ok.Load(), exhausted.Load())
	}
	if d := time.Duration(fastest.Load()); d > 50*time.Millisecond {
		t.Fatalf("refused calls took %v: they waited instead of failing fast", d)
	}
}

// TestShutdownDrains: Shutdown lets a call in flight finish, refuses new
// ones, and then closes.
func TestShutdownDrains(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	release := make(chan struct{})
	srv := n.Listen(t, serverWith(t, "Hold", func(_ context.Context, req []byte) ([]byte, error) {
		<-release
		return req, nil
	}, erpc.Background()))
	s := dialT(t, n, n.Listen(t, nil), srv)
	done := make(chan error, 1)
	go func() {
		resp, err := call(t, s, "Hold", []byte("finished"))
		if err == nil && string(resp) != "finished" {
			err = fmt.Errorf("response %q", resp)
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if _, err := call(t, s, "Hold", nil); !errors.Is(err, erpc.ErrUnavailable) {
		t.Fatalf("new call while draining: %v, want Unavailable", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a call in flight", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("call in flight during Shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestInjectedLoss: both endpoints drop 10 % of what they send; calls of
// every size still complete, exactly once.
func TestInjectedLoss(t *testing.T) {
	checkLeaks(t)
	n := udpNet{}
	lossy := func(seed uint64) erpc.Option {
		tr, err := faults.UDP("127.0.0.1:0", 0.1, seed)
		if err != nil {
			t.Fatal(err)
		}
		return erpc.WithTransport(tr)
	}
	var runs atomic.Int64
	srv := n.Listen(t, serverWith(t, "Echo", func(_ context.Context, req []byte) ([]byte, error) {
		runs.Add(1)
		return req, nil
	}), lossy(1))
	cli := n.Listen(t, nil, lossy(2))
	s := dialT(t, n, cli, srv)
	for i, size := range []int{0, 32, 2000, 50000, 1 << 20} {
		req := bytes.Repeat([]byte{byte(i + 1)}, size)
		resp, err := call(t, s, "Echo", req)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("%d bytes: %v", size, err)
		}
	}
	if runs.Load() != 5 {
		t.Fatalf("handlers ran %d times for 5 calls", runs.Load())
	}
	if st := cli.Stats(); st.Retransmits == 0 {
		t.Fatal("no retransmission: no loss was injected")
	}
}
