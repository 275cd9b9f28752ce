package erpc

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/stream"
)

// TestServerStreamFramesAnyOrder (r): the client's frames reach a
// handler's stream in any order, as the exchanges that carry them do
// (a turn may end between any two frames, and two exchanges may be out
// at once). Whatever the order of its Data, its Close and the Grants
// that give the handler credit, and wherever the handler's Recv and
// Send are waiting meanwhile, Recv returns every message once, in
// order, then io.EOF, and a Send waiting for credit goes once a Grant
// gives it.
func TestServerStreamFramesAnyOrder(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 13))
		n := rng.IntN(5)
		sends := 1 + rng.IntN(3) // the client's window is one message: each Send past the first needs a Grant
		ctx, cancel := context.WithCancelCause(context.Background())
		st := &serverStream{ep: &Endpoint{}, id: 1, hd: &streamHandler{name: "S"}, ctx: ctx, cancel: cancel, maxMsg: 1 << 10,
			send: stream.NewSender(1, 1<<20), recv: stream.NewReceiver(16, 1<<20, 1<<10),
			sendWake: make(chan struct{}, 1), recvWake: make(chan struct{}, 1)}
		var batch []byte
		for i := range n {
			batch = stream.AppendData(batch, 1, uint64(i), []byte{byte(i)})
		}
		batch = stream.AppendClose(batch, 1, uint64(n))
		for g := 2; g <= sends; g++ { // cumulative grants, each one message more
			batch = stream.AppendGrant(batch, 1, uint64(g), 1<<20)
		}
		frames := splitFrames(t, batch)
		rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
		inOrderGrants(frames)
		recvd, sent := make(chan error, 1), make(chan error, 1)
		go func() {
			for i := range n {
				m, err := st.Recv()
				if err != nil || len(m) != 1 || m[0] != byte(i) {
					recvd <- fmt.Errorf("message %d: %q, %v", i, m, err)
					return
				}
			}
			_, err := st.Recv()
			if err != io.EOF {
				err = fmt.Errorf("after the messages: %v, want io.EOF", err)
			} else {
				err = nil
			}
			recvd <- err
		}()
		go func() {
			for i := range sends {
				if err := st.Send([]byte{byte(i)}); err != nil {
					sent <- fmt.Errorf("Send %d: %v", i, err)
					return
				}
			}
			sent <- nil
		}()
		for _, f := range frames {
			if f.Kind == stream.KindGrant && !waitSent(st, f.MsgLimit-1) {
				t.Fatalf("seed %d: frames in order %v: Send did not send %d messages in 10 s", seed, kinds(frames), f.MsgLimit-1)
			}
			waitServerWaiting(st, rng.IntN(2) == 0)
			st.onFrame(&f)
		}
		for _, c := range []struct {
			what string
			ch   chan error
		}{{"Recv", recvd}, {"Send", sent}} {
			select {
			case err := <-c.ch:
				if err != nil {
					t.Fatalf("seed %d: frames in order %v: %s: %v", seed, kinds(frames), c.what, err)
				}
			case <-time.After(10 * time.Second): // a hang, not a measure
				t.Fatalf("seed %d: frames in order %v: %s still waits with every frame delivered", seed, kinds(frames), c.what)
			}
		}
		if r := st.ep.streams.count.refused.Load(); r != 0 {
			t.Fatalf("seed %d: %d frames refused", seed, r)
		}
		cancel(nil)
	}
}

// waitServerWaiting lets the handler's Recv or Send reach its wait
// first, when wait says so (bounded: they may be done already).
func waitServerWaiting(st *serverStream, wait bool) {
	for i := 0; wait && i < 1000; i++ {
		st.mu.Lock()
		w := st.recvWait || st.sendWait
		st.mu.Unlock()
		if w {
			return
		}
		runtime.Gosched()
	}
}

// inOrderGrants puts the Grant frames among frames back in their order,
// each where one of them is: a client grants message g+1 only once the
// handler's message g came (its window is one message), so its Grants
// reach the handler in order and each after the handler sent what it
// accounts for (waitSent).
func inOrderGrants(frames []stream.Frame) {
	var at []int
	var grants []stream.Frame
	for i, f := range frames {
		if f.Kind == stream.KindGrant {
			at, grants = append(at, i), append(grants, f)
		}
	}
	slices.SortFunc(grants, func(a, b stream.Frame) int { return cmp.Compare(a.MsgLimit, b.MsgLimit) })
	for k, i := range at {
		frames[i] = grants[k]
	}
}

// waitSent waits until the handler has sent n messages; false after 10 s
// (a hang, not a measure).
func waitSent(st *serverStream, n uint64) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		st.mu.Lock()
		c := st.send.Count()
		st.mu.Unlock()
		if c >= n {
			return true
		}
	}
	return false
}
