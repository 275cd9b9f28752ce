package erpc

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/stream"
)

// TestStreamHeaderAfterData (r): the server's frames reach a client
// stream in any order, as the answers that carry them do (two exchanges
// are parked at once, and a turn may put a stream's Header in one answer
// and its first Data in the next). Whatever the order of the Header,
// the Data and the End, and wherever Recv is waiting meanwhile, Recv
// returns every message once, in order, then io.EOF. It hung when the
// Header came last to a Recv already woken by Data: the Header woke
// nobody.
func TestStreamHeaderAfterData(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(4)
		st := &clientStream{id: 1, stopCtx: func() bool { return true },
			recv:       stream.NewReceiver(16, 1<<20, 1<<10),
			headerDone: make(chan struct{}), sendWake: make(chan struct{}, 1), recvWake: make(chan struct{}, 1)}
		var batch []byte
		batch = stream.AppendHeader(batch, 1, nil)
		for i := range n {
			batch = stream.AppendData(batch, 1, uint64(i), []byte{byte(i)})
		}
		frames := splitFrames(t, batch)
		rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
		got := make(chan error, 2)
		go func() {
			for i := range n {
				m, err := st.Recv()
				if err != nil || len(m) != 1 || m[0] != byte(i) {
					got <- fmt.Errorf("message %d: %q, %v", i, m, err)
					return
				}
			}
			got <- nil
			_, err := st.Recv()
			got <- err
		}()
		for _, f := range frames {
			waitRecvWaiting(st, rng.IntN(2) == 0)
			st.onFrame(&f)
		}
		// Every message is in, and the handler waits for credit: no
		// frame comes until Recv takes them.
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("seed %d: frames in order %v: %v", seed, kinds(frames), err)
			}
		case <-time.After(10 * time.Second): // a hang, not a measure
			t.Fatalf("seed %d: frames in order %v: Recv still waits with every message delivered", seed, kinds(frames))
		}
		end := splitFrames(t, stream.AppendEnd(nil, 1, uint64(n), 0, nil, nil))
		st.onFrame(&end[0])
		if err := <-got; err != io.EOF {
			t.Fatalf("seed %d: after the End: %v, want io.EOF", seed, err)
		}
	}
}

// waitRecvWaiting lets the reader reach its wait first, when wait says so
// (bounded: the reader may be done already).
func waitRecvWaiting(st *clientStream, wait bool) {
	for i := 0; wait && i < 1000; i++ {
		st.mu.Lock()
		w := st.recvWait
		st.mu.Unlock()
		if w {
			return
		}
		runtime.Gosched()
	}
}

func splitFrames(t *testing.T, batch []byte) []stream.Frame {
	t.Helper()
	var rd stream.Reader
	rd.Reset(batch)
	var out []stream.Frame
	var f stream.Frame
	for rd.Next(&f) {
		out = append(out, f)
	}
	if rd.Err() != nil {
		t.Fatal(rd.Err())
	}
	return out
}

func kinds(fs []stream.Frame) []uint8 {
	k := make([]uint8, len(fs))
	for i, f := range fs {
		k[i] = uint8(f.Kind)
	}
	return k
}
