package erpc_test

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// heapInUse is the heap in use after two collections: the first moves
// what sync.Pools hold (buffers no stream holds) to their victim caches,
// the second frees them.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestStreamIdleAfterBurst: an idle stream keeps a few kilobytes beyond
// its last message and a small free list, even after it carried a whole
// window's burst each way (64 x 64 KiB), every message read: the buffers
// the burst used are not kept for the stream's life.
func TestStreamIdleAfterBurst(t *testing.T) {
	checkLeaks(t)
	const streams, burst, size = 8, 64, 64 << 10
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Burst", func(s erpc.ServerStream) error {
		msg := make([]byte, size)
		for range burst {
			if _, err := s.Recv(); err != nil {
				return err
			}
		}
		for range burst {
			if err := s.Send(msg); err != nil {
				return err
			}
		}
		if _, err := s.Recv(); err != io.EOF { // idle until the client ends
			return err
		}
		return nil
	}))
	_, _, sess := limitPair(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sts []erpc.ClientStream
	msg := make([]byte, size)
	burstOn := func() {
		st, err := sess.NewStream(ctx, "Burst")
		must(t, err)
		for range burst {
			must(t, st.Send(msg))
		}
		for range burst {
			if _, err := st.Recv(); err != nil {
				t.Fatal(err)
			}
		}
		sts = append(sts, st)
	}
	// One stream first: the session's exchange buffers and the engines'
	// pools grow to a batch's size then, and stay (they are the session's
	// and the endpoint's, whatever the number of streams).
	burstOn()
	time.Sleep(100 * time.Millisecond)
	base := heapInUse()
	for range streams {
		burstOn()
	}
	time.Sleep(100 * time.Millisecond) // the last grants travel
	per := (int64(heapInUse()) - int64(base)) / streams
	for _, st := range sts {
		must(t, st.CloseSend())
		if _, err := st.Recv(); err != io.EOF {
			t.Fatal(err)
		}
	}
	t.Logf("an idle stream after a %d KiB burst each way: heap +%d KiB (both ends)", burst*size>>10, per>>10)
	// The docs' bound: the last message a side read (the application's
	// until its next Recv), at most 64 KiB of free buffers per side, and
	// a few kilobytes; with 128 KiB of slack for the handler's goroutine
	// and the heap's granularity (9 MiB before the free list and the
	// output buffers were bounded).
	if limit := int64(size + 2*(64<<10) + 128<<10); per > limit {
		t.Errorf("an idle stream holds %d KiB (both ends), want at most %d KiB", per>>10, limit>>10)
	}
}

// TestStreamSessionEndReachesHandler: a client session's end (its Close,
// or its endpoint's) ends the handlers' streams with Unavailable saying
// the client's session ended, as the client's own side gets.
func TestStreamSessionEndReachesHandler(t *testing.T) {
	for _, how := range []string{"SessionClose", "ClientEndpointClose"} {
		t.Run(how, func(t *testing.T) {
			checkLeaks(t)
			ended := make(chan error, 1)
			srv := erpc.NewServer()
			must(t, srv.HandleStream("Hold", func(s erpc.ServerStream) error {
				must(t, s.Send([]byte("hi")))
				<-s.Context().Done()
				err := s.Send([]byte("late"))
				ended <- err
				return err
			}))
			_, cliEP, sess := limitPair(t, srv, nil)
			st, err := sess.NewStream(context.Background(), "Hold")
			must(t, err)
			if _, err := st.Recv(); err != nil {
				t.Fatal(err)
			}
			if how == "SessionClose" {
				sess.Close()
			} else {
				cliEP.Close()
			}
			if _, err := st.Recv(); erpc.CodeOf(err) != erpc.Unavailable {
				t.Errorf("client's Recv: %v, want Unavailable", err)
			}
			select {
			case err := <-ended:
				if erpc.CodeOf(err) != erpc.Unavailable || !strings.Contains(err.Error(), "the client's session ended") {
					t.Errorf("handler's Send: %v, want Unavailable saying the client's session ended", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("the handler's stream did not end")
			}
		})
	}
}
