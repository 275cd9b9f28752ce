package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// revMsg is message i of stream sid, size bytes (at least 12): its ids
// and a pattern, so a lost, doubled, reordered or mixed message shows.
func revMsg(sid, i uint32, size int) []byte {
	b := make([]byte, max(size, 12))
	binary.LittleEndian.PutUint32(b, sid)
	binary.LittleEndian.PutUint32(b[4:], i)
	binary.LittleEndian.PutUint32(b[8:], uint32(size))
	for j := 12; j < len(b); j++ {
		b[j] = byte(sid*7 + i*13 + uint32(j))
	}
	return b
}

// runBidiEcho opens streams bidi echo streams on sess; each sends msgs
// messages of random sizes up to maxSize, and the handler echoes each;
// every echo must come back once and in order.
func runBidiEcho(t *testing.T, sess *erpc.Session, seed uint64, streams, msgs, maxSize int, win []erpc.StreamOption) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*streams)
	for s := range streams {
		st, err := sess.NewStream(ctx, "Echo", win...)
		if err != nil {
			return fmt.Errorf("stream %d: NewStream: %w", s, err)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(s)))
		sizes := make([]int, msgs)
		for i := range sizes {
			switch rng.IntN(4) {
			case 0:
				sizes[i] = 12
			case 1:
				sizes[i] = maxSize
			default:
				sizes[i] = 12 + rng.IntN(maxSize-11)
			}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i, n := range sizes {
				if err := st.Send(revMsg(uint32(s), uint32(i), n)); err != nil {
					errs <- fmt.Errorf("stream %d: Send %d: %w", s, i, err)
					return
				}
			}
			st.CloseSend()
		}()
		go func() {
			defer wg.Done()
			for i, n := range sizes {
				got, err := st.Recv()
				if err != nil {
					errs <- fmt.Errorf("stream %d: Recv %d of %d: %w", s, i, len(sizes), err)
					return
				}
				if want := revMsg(uint32(s), uint32(i), n); !bytes.Equal(got, want) {
					errs <- fmt.Errorf("stream %d: message %d: got %d bytes (head % x), want %d", s, i, len(got), got[:min(12, len(got))], n)
					return
				}
			}
			if _, err := st.Recv(); err != io.EOF {
				errs <- fmt.Errorf("stream %d: end: %v", s, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// echoBack is a stream handler that sends back every message it gets.
func echoBack(s erpc.ServerStream) error {
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(m); err != nil {
			return err
		}
	}
}

func echoStreamServer(t *testing.T, win ...erpc.StreamOption) *erpc.Server {
	return streamServer(t, "Echo", echoBack, win...)
}

// TestTurnsSmallMaxMessage: bidi echo over many streams with a
// small WithMaxMessageSize (the batch smaller than a turn) and a tiny
// stream window (a grant due after every message), messages from 12
// bytes to the largest a stream carries.
func TestTurnsSmallMaxMessage(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		const maxMsg = 4096
		win := []erpc.StreamOption{erpc.StreamWindow(2, 1<<20)}
		srv := echoStreamServer(t, win...)
		n := newMemNet()
		_, sess := streamPair(t, n, srv, erpc.WithMaxMessageSize(maxMsg))
		if err := runBidiEcho(t, sess, seed, 8, 300, 200, win); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestTurnsAtMessageLimit: bidi echo with messages up to the largest
// a stream carries at WithMaxMessageSize(4096) (4096-64 bytes), a window
// of two messages (a grant per message), 8 streams.
func TestTurnsAtMessageLimit(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		win := []erpc.StreamOption{erpc.StreamWindow(2, 1<<20)}
		srv := echoStreamServer(t, win...)
		n := newMemNet()
		_, sess := streamPair(t, n, srv, erpc.WithMaxMessageSize(4096))
		if err := runBidiEcho(t, sess, seed, 8, 200, 4096-64, win); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
