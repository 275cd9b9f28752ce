package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestTurnsMixedShapes: per seed (two; the review ran four), 12 streams at once on one
// session, each server-streaming, client-streaming or bidi, with random
// message sizes (1 byte to 200 KiB, beyond a turn), random windows, and
// about one in four canceled midway by the client. Every stream not
// canceled must deliver every message once, in order, both ways, and end
// with the handler's status; a canceled one must end with Canceled.
func TestTurnsMixedShapes(t *testing.T) {
	checkLeaks(t)
	srv := erpc.NewServer()
	// "Mix": the request says how many messages to send of which sizes
	// (seeded); the handler reads the client's until EOF, checking them,
	// and answers with how many it read as its last message.
	must(t, srv.HandleStream("Mix", func(s erpc.ServerStream) error {
		first, err := s.Recv()
		if err != nil {
			return err
		}
		var seed, sid uint64
		var shape int
		fmt.Sscanf(string(first), "%d %d %d", &seed, &sid, &shape)
		sendSizes, recvSizes := mixPlan(seed, sid, shape)
		errc := make(chan error, 1)
		go func() {
			for i, n := range recvSizes {
				m, err := s.Recv()
				if err != nil {
					errc <- fmt.Errorf("handler Recv %d: %w", i, err)
					return
				}
				if !bytes.Equal(m, revMsg(uint32(sid), uint32(i), n)) {
					errc <- fmt.Errorf("handler: message %d of stream %d wrong", i, sid)
					return
				}
			}
			if _, err := s.Recv(); err != io.EOF {
				errc <- fmt.Errorf("handler end: %v", err)
				return
			}
			errc <- nil
		}()
		for i, n := range sendSizes {
			if err := s.Send(revMsg(uint32(sid), uint32(i), n)); err != nil {
				return err
			}
		}
		if err := <-errc; err != nil {
			return &erpc.Error{Code: erpc.DataLoss, Msg: err.Error()}
		}
		return nil
	}))
	n := newMemNet()
	_, sess := streamPair(t, n, srv)
	for seed := uint64(1); seed <= 2; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for sid := range uint64(12) {
			shape := rng.IntN(3)
			cancelAt := -1
			if rng.IntN(4) == 0 {
				cancelAt = rng.IntN(20)
			}
			var opts []erpc.StreamOption
			if rng.IntN(2) == 0 {
				opts = append(opts, erpc.StreamWindow(1+rng.IntN(8), 1+rng.IntN(256<<10)))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := mixClient(sess, seed, sid, shape, cancelAt, opts); err != nil {
					errs <- fmt.Errorf("seed %d stream %d shape %d cancelAt %d: %w", seed, sid, shape, cancelAt, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
	}
}

// mixPlan is the sizes the handler sends and the client sends (after its
// first message) for stream sid of shape 0 (server-streaming), 1
// (client-streaming) or 2 (bidi).
func mixPlan(seed, sid uint64, shape int) (down, up []int) {
	rng := rand.New(rand.NewPCG(seed, sid))
	sizes := func(k int) []int {
		s := make([]int, k)
		for i := range s {
			switch rng.IntN(8) {
			case 0:
				s[i] = 12 + rng.IntN(200<<10)
			case 1, 2:
				s[i] = 12 + rng.IntN(8<<10)
			default:
				s[i] = 12 + rng.IntN(64)
			}
		}
		return s
	}
	switch shape {
	case 0:
		return sizes(50 + rng.IntN(200)), nil
	case 1:
		return nil, sizes(50 + rng.IntN(200))
	default:
		return sizes(50 + rng.IntN(200)), sizes(50 + rng.IntN(200))
	}
}

func mixClient(sess *erpc.Session, seed, sid uint64, shape, cancelAt int, opts []erpc.StreamOption) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	st, err := sess.NewStream(sctx, "Mix", opts...)
	if err != nil {
		return err
	}
	down, up := mixPlan(seed, sid, shape)
	if err := st.Send([]byte(fmt.Sprintf("%d %d %d", seed, sid, shape))); err != nil {
		return err
	}
	sendErr := make(chan error, 1)
	go func() {
		for i, n := range up {
			if i == cancelAt && shape == 1 {
				scancel()
			}
			if err := st.Send(revMsg(uint32(sid), uint32(i), n)); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- st.CloseSend()
	}()
	for i, n := range down {
		if i == cancelAt {
			scancel()
		}
		m, err := st.Recv()
		if err != nil {
			if cancelAt >= 0 && errors.Is(err, context.Canceled) || erpc.CodeOf(err) == erpc.Canceled {
				<-sendErr
				return nil
			}
			return fmt.Errorf("Recv %d of %d: %w", i, len(down), err)
		}
		if !bytes.Equal(m, revMsg(uint32(sid), uint32(i), n)) {
			return fmt.Errorf("message %d: %d bytes, want %d", i, len(m), n)
		}
	}
	_, err = st.Recv()
	serr := <-sendErr
	if cancelAt >= 0 && (erpc.CodeOf(err) == erpc.Canceled || errors.Is(err, context.Canceled)) {
		return nil
	}
	if err != io.EOF {
		return fmt.Errorf("end: %v (send: %v)", err, serr)
	}
	if serr != nil {
		return fmt.Errorf("send: %v", serr)
	}
	return nil
}
