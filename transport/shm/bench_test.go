//go:build linux

package shm_test

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/shm"
)

// pair makes two connected transports.
func pair(t testing.TB, opts shm.Options) (a, b *shm.Transport) {
	dir := sockDir(t)
	a = listen(t, filepath.Join(dir, "a.sock"), opts)
	b = listen(t, filepath.Join(dir, "b.sock"), opts)
	if _, err := a.Resolve(filepath.Join(dir, "b.sock")); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// BenchmarkPingPong bounces a 32-byte datagram between two goroutines over
// the raw transport: "spin" polls Receive, "sleep" sleeps in Wait whenever
// nothing has arrived (a wake-up per message each way).
func BenchmarkPingPong(b *testing.B) {
	for _, mode := range []string{"spin", "sleep"} {
		b.Run(mode, func(b *testing.B) {
			x, y := pair(b, shm.Options{})
			wait := func(tr transport.Transport) {
				if mode == "spin" {
					runtime.Gosched()
				} else {
					tr.Wait(time.Now().Add(time.Second))
				}
			}
			var stop atomic.Bool
			done := make(chan struct{})
			go func() { // echo
				defer close(done)
				msg := []transport.Message{{Head: nil}}
				for !stop.Load() {
					n, _ := y.Receive(func(from netip.AddrPort, data []byte) {
						msg[0].To, msg[0].Head = from, data
						y.Send(msg)
					})
					if n == 0 {
						wait(y)
					}
				}
			}()
			req := []transport.Message{{To: y.LocalAddr(), Head: make([]byte, 32)}}
			got := false
			onReply := func(netip.AddrPort, []byte) { got = true }
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				x.Send(req)
				for got = false; !got; {
					if n, _ := x.Receive(onReply); n == 0 {
						wait(x)
					}
				}
			}
			b.StopTimer()
			stop.Store(true)
			y.Wake()
			<-done
		})
	}
}

// BenchmarkCall is an erpc call round trip of 32 bytes between two
// endpoints of this process over shm, with the default loop (spin 50 µs,
// then the bell). (Busy polling wants a core per endpoint plus one for the
// caller: not on a 2-core box.)
func BenchmarkCall(b *testing.B) {
	s := echoPair(b)
	req := bytes.Repeat([]byte("x"), 32)
	var resp []byte
	var err error
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if resp, err = s.Call(ctx, "Echo", req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// echoPair starts a server with a zero-copy Echo handler and a client
// endpoint over shm in this process, both with opts, and returns the
// client's session; the endpoints close when b ends.
func echoPair(b *testing.B, opts ...erpc.Option) *erpc.Session {
	path := filepath.Join(sockDir(b), "srv.sock")
	h := erpc.NewServer()
	h.HandleRaw("Echo", func(r erpc.Request) {
		out := r.ResponseBuffer(len(r.Data()))
		copy(out, r.Data())
		r.Respond(out)
	})
	srv, err := h.Listen("shm://"+path, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	cli, err := erpc.Listen("shm://", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	s, err := cli.Dial(context.Background(), "shm://"+path)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCallProcess is an erpc call round trip of 32 bytes to a server
// in another process (TestHelperServer), the client's loop spinning 50 µs
// (the default) before it sleeps.
func BenchmarkCallProcess(b *testing.B) {
	path := filepath.Join(sockDir(b), "srv.sock")
	startServer(b, path)
	s, err := erpc.Dial(context.Background(), "shm://"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	req := bytes.Repeat([]byte("x"), 32)
	var resp []byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if resp, err = s.Call(context.Background(), "Echo", req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLargeCallProcess is erpc-bench's bandwidth point over shm in
// a benchmark: 8 MiB requests, 32-byte responses, one call at a time, to
// a server in another process (TestHelperServer's Sink), each call issued
// from the previous one's continuation. Both copies of each byte (into
// the ring here, out of it into the request's buffer there) run at once
// on two cores; MB/s is the rate of request bytes.
func BenchmarkLargeCallProcess(b *testing.B) {
	path := filepath.Join(sockDir(b), "srv.sock")
	startServer(b, path)
	ep, err := erpc.Listen("shm://")
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	s, err := ep.Dial(context.Background(), "shm://"+path)
	if err != nil {
		b.Fatal(err)
	}
	req := bytes.Repeat([]byte("x"), 8<<20)
	resp := make([]byte, 0, 64)
	done := make(chan error, 1)
	left := 0
	var next func([]byte, error)
	next = func(_ []byte, err error) {
		if err != nil || left == 0 {
			done <- err
			return
		}
		left--
		s.Go("Sink", req, resp[:0], next)
	}
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	b.ResetTimer()
	left = b.N
	next(nil, nil)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPingPongProcess bounces a 32-byte datagram off a raw echo
// transport in another process (TestHelperServer in raw mode); both sides
// poll without sleeping: the transport's floor.
func BenchmarkPingPongProcess(b *testing.B) {
	path := filepath.Join(sockDir(b), "echo.sock")
	startHelper(b, path, "raw")
	x := listen(b, "", shm.Options{})
	to, err := x.Resolve(path)
	if err != nil {
		b.Fatal(err)
	}
	req := []transport.Message{{To: to, Head: make([]byte, 32)}}
	got := false
	onReply := func(netip.AddrPort, []byte) { got = true }
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		x.Send(req)
		for got = false; !got; {
			x.Receive(onReply)
		}
	}
}

// BenchmarkGoChain is a chain of 32-byte calls over shm in one process,
// each issued from the previous one's continuation on the client's loop
// (erpc-bench's "erpc" system): the loops' own cost per round trip.
func BenchmarkGoChain(b *testing.B) {
	b.Run("default", func(b *testing.B) { goChain(b, erpc.WithSpin(-1)) })
	b.Run("busy", func(b *testing.B) { goChain(b, erpc.WithBusyPoll(-1)) })
}

func goChain(b *testing.B, opt erpc.Option) {
	s := echoPair(b, opt)
	req := bytes.Repeat([]byte("x"), 32)
	resp := make([]byte, 0, 64)
	done := make(chan error, 1)
	left := 0
	var next func([]byte, error)
	next = func(_ []byte, err error) {
		if err != nil || left == 0 {
			done <- err
			return
		}
		left--
		s.Go("Echo", req, resp[:0], next)
	}
	b.ReportAllocs()
	b.ResetTimer()
	left = b.N
	next(nil, nil)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
