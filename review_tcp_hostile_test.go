package erpc_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

var reviewPreface = []byte("eRPC/tcp\x01\n")

// reviewFrames is a seeded stream of hostile frames: empty ones, one of
// exactly MaxDatagram (256 KiB) bytes of noise, and random ones, some
// shaped like erpc packets (a plausible first byte) but random beyond.
func reviewFrames(rng *rand.Rand) []byte {
	var b []byte
	frame := func(d []byte) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
	}
	frame(nil)
	frame(nil)
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	frame(big)
	for range 200 {
		n := rng.IntN(100)
		if rng.IntN(10) == 0 {
			n = rng.IntN(70 << 10)
		}
		d := make([]byte, n)
		for i := range d {
			d[i] = byte(rng.Uint32())
		}
		frame(d)
	}
	return b
}

// TestReviewTCPHostileFrames: promise 4 at the endpoint: peers that send
// the preface and then empty frames, a frame of exactly MaxDatagram, random
// datagrams, byte at a time or in random splits, and peers that send a
// length of 2^32-1 or MaxDatagram+1, never panic the server or stop it
// serving a well-behaved client.
func TestReviewTCPHostileFrames(t *testing.T) {
	sep, err := reviewEchoServer(t).Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	addr := strings.TrimPrefix(sep.Target(), "tcp://")
	rng := rand.New(rand.NewPCG(3, 4))
	var wg sync.WaitGroup
	for i := range 6 {
		stream := append(append([]byte{}, reviewPreface...), reviewFrames(rng)...)
		switch i {
		case 4:
			stream = binary.BigEndian.AppendUint32(stream, 1<<32-1)
		case 5:
			stream = binary.BigEndian.AppendUint32(stream, 256<<10+1)
		}
		seed := rng.Uint64()
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			go func() { _, _ = c.Read(make([]byte, 1<<20)) }()
			r := rand.New(rand.NewPCG(seed, 1))
			for len(stream) > 0 {
				n := 1
				if i%2 == 1 {
					n = 1 + r.IntN(9000)
				}
				n = min(n, len(stream))
				if _, err := c.Write(stream[:n]); err != nil {
					return // cut off
				}
				stream = stream[n:]
				if i%2 == 0 && len(stream) > 300<<10-2000 {
					continue
				}
				if i%2 == 0 { // byte at a time only for the first bytes; the rest in one write
					c.Write(stream)
					return
				}
			}
			time.Sleep(100 * time.Millisecond)
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, sep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20 {
		req := []byte(fmt.Sprint(i))
		if resp, err := s.Call(ctx, "Echo", req, nil); err != nil || string(resp) != string(req) {
			t.Fatalf("after hostile peers, call %d: %q, %v", i, resp, err)
		}
	}
}

// reviewFDs counts this process's open descriptors.
func reviewFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	return len(ents)
}

// TestReviewTCPCloseLeaks: endpoints over TCP closed with calls pending
// (a handler that never answers), with connections half set up (a dial
// to a peer that accepts but never sends the preface), leave no
// descriptor and no goroutine behind.
func TestReviewTCPCloseLeaks(t *testing.T) {
	// A peer that accepts and then says nothing.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	var muted []net.Conn
	var mmu sync.Mutex
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			mmu.Lock()
			muted = append(muted, c)
			mmu.Unlock()
		}
	}()
	defer func() {
		mmu.Lock()
		for _, c := range muted {
			c.Close()
		}
		mmu.Unlock()
	}()
	time.Sleep(50 * time.Millisecond)
	fds0, g0 := reviewFDs(t), runtime.NumGoroutine()
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 4 {
		block := make(chan struct{})
		srv := erpc.NewServer()
		if err := srv.Handle("Hang", func(ctx context.Context, _ []byte) ([]byte, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		sep, err := srv.Listen("tcp://127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cep, err := erpc.Listen("tcp://127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := cep.Dial(ctx, sep.Target())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 1 + rng.IntN(8) {
			wg.Go(func() { _, _ = s.Call(ctx, "Hang", nil, nil) })
		}
		// A dial that will sit in its handshake.
		dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, _ = cep.Dial(dctx, "tcp://"+mute.Addr().String())
		dcancel()
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		if round%2 == 0 {
			cep.Close()
			sep.Close()
		} else {
			sep.Close()
			cep.Close()
		}
		wg.Wait()
		close(block)
		cancel()
	}
	var fds, g int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		mmu.Lock()
		fds, g = reviewFDs(t)-len(muted), runtime.NumGoroutine() // the mute peer's own ends are the test's
		mmu.Unlock()
		if fds <= fds0 && g <= g0 {
			return
		}
	}
	buf := make([]byte, 1<<16)
	n := runtime.Stack(buf, true)
	t.Fatalf("after Close: %d descriptors (before %d), %d goroutines (before %d)\n%s", fds, fds0, g, g0, buf[:n])
}
