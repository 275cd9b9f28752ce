package erpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport/memnet"
)

// TestStreamsUnderFaults: for many seeds, a network that loses,
// duplicates and reorders datagrams carries several bidirectional and
// server streams at once on one session, with small windows and
// messages of one to many packets. Every message arrives exactly once
// and in order, both ways, every stream ends with its status, and each
// NewStream runs its handler once. The TLS variant runs it all with
// every packet sealed.
func TestStreamsUnderFaults(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) { testStreamsUnderFaults(t) })
	t.Run("tls", func(t *testing.T) { testStreamsUnderFaults(t, erpc.WithTLS(newTestPKI(t).bothTLS())) })
}

func testStreamsUnderFaults(t *testing.T, opts ...erpc.Option) {
	checkLeaks(t)
	seeds := 5
	if testing.Short() {
		seeds = 2
	}
	var lost, dup, reordered uint64
	for seed := range uint64(seeds) {
		st := runStreamsUnderFaults(t, seed, opts...)
		lost, dup, reordered = lost+st.Lost, dup+st.Duplicated, reordered+st.Reordered
	}
	if lost == 0 || dup == 0 || reordered == 0 {
		t.Fatalf("faults not injected: lost %d, duplicated %d, reordered %d", lost, dup, reordered)
	}
}

func runStreamsUnderFaults(t *testing.T, seed uint64, opts ...erpc.Option) memnet.Stats {
	net := memnet.NewNetwork(seed+100, memnet.LinkConfig{Loss: 0.03, Dup: 0.03, Reorder: 0.05,
		ReorderDelay: 300 * time.Microsecond})
	n := &memNet{net}
	var mu sync.Mutex
	opens := map[uint64]int{}
	opened := func(s erpc.ServerStream) ([]byte, error) {
		first, err := s.Recv()
		if err != nil {
			return nil, err
		}
		mu.Lock()
		opens[binary.LittleEndian.Uint64(first)]++
		mu.Unlock()
		return first, nil
	}
	srv := erpc.NewServer()
	must(t, srv.HandleStream("Echo", func(s erpc.ServerStream) error {
		if _, err := opened(s); err != nil {
			return err
		}
		for {
			m, err := s.Recv()
			if err == io.EOF {
				return erpc.Errorf(erpc.OutOfRange, "echoed all")
			}
			if err != nil {
				return err
			}
			if err := s.Send(m); err != nil {
				return err
			}
		}
	}, erpc.StreamWindow(4, 100<<10)))
	must(t, srv.HandleStream("Count", func(s erpc.ServerStream) error {
		first, err := opened(s)
		if err != nil {
			return err
		}
		for i := range binary.LittleEndian.Uint64(first[8:]) {
			if err := s.Send(seqMsg(i, 8+int(i%7)*300)); err != nil {
				return err
			}
		}
		return nil
	}))
	_, sess := streamPair(t, n, srv, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for k := range uint64(4) {
		tag := seed<<8 | k
		wg.Go(func() {
			if k%2 == 0 {
				echoStream(t, ctx, sess, tag, rand.New(rand.NewPCG(seed, k)))
			} else {
				countStream(t, ctx, sess, tag, 200)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(opens) != 4 {
		t.Fatalf("seed %d: %d streams opened, want 4", seed, len(opens))
	}
	for tag, c := range opens {
		if c != 1 {
			t.Fatalf("seed %d: stream %x opened %d times", seed, tag, c)
		}
	}
	return net.Stats()
}

func echoStream(t *testing.T, ctx context.Context, sess *erpc.Session, tag uint64, rng *rand.Rand) {
	st, err := sess.NewStream(ctx, "Echo", erpc.StreamWindow(3, 80<<10))
	if err != nil {
		t.Error(err)
		return
	}
	if err := st.Send(binary.LittleEndian.AppendUint64(nil, tag)); err != nil {
		t.Error(err)
		return
	}
	sizes := []int{8, 100, 1400, 3000, 20000, 70000}
	const msgs = 60
	done := make(chan struct{})
	go func() { // receive while sending: the windows are smaller than the stream
		defer close(done)
		for i := range uint64(msgs) {
			m, err := st.Recv()
			if err != nil || !bytes.Equal(m, seqMsg(i, sizes[i%uint64(len(sizes))])) {
				t.Errorf("stream %x: echo %d: %v", tag, i, err)
				return
			}
		}
		if _, err := st.Recv(); erpc.CodeOf(err) != erpc.OutOfRange {
			t.Errorf("stream %x: status %v", tag, err)
		}
	}()
	for i := range uint64(msgs) {
		if rng.IntN(8) == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
		if err := st.Send(seqMsg(i, sizes[i%uint64(len(sizes))])); err != nil {
			t.Errorf("stream %x: send %d: %v", tag, i, err)
			break
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Error(err)
	}
	<-done
}

func countStream(t *testing.T, ctx context.Context, sess *erpc.Session, tag, count uint64) {
	st, err := sess.NewStream(ctx, "Count", erpc.StreamWindow(5, 2000))
	if err != nil {
		t.Error(err)
		return
	}
	first := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, tag), count)
	if err := st.Send(first); err != nil {
		t.Error(err)
		return
	}
	for i := range count {
		m, err := st.Recv()
		if err != nil || !bytes.Equal(m, seqMsg(i, 8+int(i%7)*300)) {
			t.Errorf("stream %x: message %d: %v", tag, i, err)
			return
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		t.Errorf("stream %x: end %v", tag, err)
	}
}
