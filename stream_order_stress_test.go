package erpc_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestStreamFramesAnyOrder (r): per seed, 16 streams at once on a
// network that reorders, loses and duplicates datagrams, so that the
// answers and exchanges carrying a stream's frames arrive in any order;
// both ends take messages of at most 4 KiB (turns end at the batch
// limit) and both sides' windows are one or two messages of a few KiB
// (every message or two waits for a Grant). Each handler sets a header
// (sent with its first message, or at once), sends at once without
// waiting for the client, reads the client's messages meanwhile, sets a
// trailer and returns a status; one stream in five is canceled midway.
// Every stream not canceled gives its header, every message once and in
// order both ways, its status and its trailer; a canceled one ends with
// Canceled. A hang shows as the streams' 20 s deadline.
func TestStreamFramesAnyOrder(t *testing.T) {
	checkLeaks(t)
	for seed := range uint64(3) {
		net := memnet.NewNetwork(seed+300, memnet.LinkConfig{Loss: 0.01, Dup: 0.01, Reorder: 0.2,
			ReorderDelay: time.Millisecond})
		runFramesAnyOrder(t, &memNet{net}, seed)
		if st := net.Stats(); st.Reordered == 0 || st.Lost == 0 {
			t.Fatalf("seed %d: faults not injected: %+v", seed, st)
		}
		if t.Failed() {
			return
		}
	}
}

// orderPlan is stream sid's plan: the sizes the handler sends (down),
// those the client sends (up), the handler's status code, and whether
// the handler sends its header at once.
func orderPlan(seed, sid uint64) (down, up []int, code erpc.Code, sendHeader bool) {
	rng := rand.New(rand.NewPCG(seed, sid))
	sizes := func() []int {
		s := make([]int, rng.IntN(40))
		for i := range s {
			if rng.IntN(4) == 0 {
				s[i] = 4096 - 64 - rng.IntN(64)
			} else {
				s[i] = 12 + rng.IntN(100)
			}
		}
		return s
	}
	down, up = sizes(), sizes()
	if rng.IntN(2) == 0 {
		code = erpc.Aborted
	}
	return down, up, code, rng.IntN(2) == 0
}

func orderHandler(s erpc.ServerStream) error {
	md, _ := erpc.IncomingMetadata(s.Context())
	seed, _ := strconv.ParseUint(md.Get("seed"), 10, 64)
	sid, _ := strconv.ParseUint(md.Get("sid"), 10, 64)
	down, up, code, sendHeader := orderPlan(seed, sid)
	hd := erpc.Metadata{"h": {md.Get("sid")}}
	if sendHeader {
		if err := s.SendHeader(hd); err != nil {
			return err
		}
	} else if err := s.SetHeader(hd); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		for i, n := range up {
			m, err := s.Recv()
			if err != nil {
				errc <- fmt.Errorf("handler Recv %d: %w", i, err)
				return
			}
			if !bytes.Equal(m, revMsg(uint32(sid), uint32(i), n)) {
				errc <- fmt.Errorf("handler: message %d wrong", i)
				return
			}
		}
		if _, err := s.Recv(); err != io.EOF {
			errc <- fmt.Errorf("handler end: %v", err)
			return
		}
		errc <- nil
	}()
	for i, n := range down {
		if err := s.Send(revMsg(uint32(sid), uint32(i), n)); err != nil {
			return err
		}
	}
	if err := <-errc; err != nil {
		return &erpc.Error{Code: erpc.DataLoss, Msg: err.Error()}
	}
	s.SetTrailer(erpc.Metadata{"t": {md.Get("sid")}})
	if code != erpc.OK {
		return &erpc.Error{Code: code, Msg: "planned"}
	}
	return nil
}

func runFramesAnyOrder(t *testing.T, n *memNet, seed uint64) {
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Order", orderHandler, erpc.StreamWindow(2, 3000)))
	_, sess := streamPair(t, n, srv, erpc.WithMaxMessageSize(4096))
	rng := rand.New(rand.NewPCG(seed, 1))
	var wg sync.WaitGroup
	for sid := range uint64(16) {
		cancelAt := -1
		if rng.IntN(5) == 0 {
			cancelAt = rng.IntN(20)
		}
		window := erpc.StreamWindow(1+rng.IntN(2), 1+rng.IntN(5000))
		wg.Go(func() {
			if err := orderClient(sess, seed, sid, cancelAt, window); err != nil {
				t.Errorf("seed %d stream %d (cancel at %d): %v", seed, sid, cancelAt, err)
			}
		})
	}
	wg.Wait()
}

func orderClient(sess *erpc.Session, seed, sid uint64, cancelAt int, window erpc.StreamOption) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang, not a measure
	defer cancel()
	sctx, scancel := context.WithCancel(erpc.NewOutgoingContext(ctx, erpc.Metadata{
		"seed": {strconv.FormatUint(seed, 10)}, "sid": {strconv.FormatUint(sid, 10)}}))
	defer scancel()
	down, up, code, _ := orderPlan(seed, sid)
	st, err := sess.NewStream(sctx, "Order", window)
	if err != nil {
		return err
	}
	canceled := func(err error) bool { return cancelAt >= 0 && erpc.CodeOf(err) == erpc.Canceled }
	sendErr := make(chan error, 1)
	go func() {
		for i, n := range up {
			if i == cancelAt {
				scancel()
			}
			if err := st.Send(revMsg(uint32(sid), uint32(i), n)); err != nil {
				if canceled(err) || err == io.EOF {
					err = nil // canceled, or the handler ended (Recv says why)
				}
				sendErr <- err
				return
			}
		}
		sendErr <- st.CloseSend()
	}()
	hd, herr := st.Header()
	for i, n := range down {
		if i == cancelAt {
			scancel()
		}
		m, err := st.Recv()
		if canceled(err) {
			return <-sendErr
		}
		if err != nil {
			return fmt.Errorf("Recv %d of %d: %w", i, len(down), err)
		}
		if !bytes.Equal(m, revMsg(uint32(sid), uint32(i), n)) {
			return fmt.Errorf("message %d wrong (%d bytes, want %d)", i, len(m), n)
		}
	}
	_, err = st.Recv()
	serr := <-sendErr
	if canceled(err) {
		return serr
	}
	switch {
	case herr != nil || hd.Get("h") != strconv.FormatUint(sid, 10):
		return fmt.Errorf("Header() = %v, %v", hd, herr)
	case code == erpc.OK && err != io.EOF, code != erpc.OK && erpc.CodeOf(err) != code:
		return fmt.Errorf("end %v, want %v", err, code)
	case serr != nil:
		return fmt.Errorf("send: %v", serr)
	case st.Trailer().Get("t") != strconv.FormatUint(sid, 10):
		return fmt.Errorf("trailer %v", st.Trailer())
	}
	return nil
}
