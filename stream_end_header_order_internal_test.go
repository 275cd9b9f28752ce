package erpc

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/stream"
)

// TestStreamEndBeforeHeader (r): a handler's Header, messages and End
// reach the client in answers that arrive in any order (two exchanges
// are parked at once, and a turn may end between any two frames of a
// stream). Whatever the split and the order, the client's Header()
// gives the handler's header, Recv every message once, in order, then
// io.EOF, and Trailer the handler's trailers. An End that came before
// the Header made the client take it that no header would come: the
// header was lost (Header() returned nil), and once everything else had
// come the stream was dropped, so the late Header frame found no
// stream.
func TestStreamEndBeforeHeader(t *testing.T) {
	header := metadataBlock(Metadata{"h": {"v"}})
	trailer := metadataBlock(Metadata{"t": {"w"}})
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 11))
		n := rng.IntN(4)
		cs := &cliSession{s: &Session{}, streams: map[uint64]*clientStream{}}
		st := &clientStream{id: 1, cs: cs, sess: cs.s, stopCtx: func() bool { return true },
			recv:       stream.NewReceiver(16, 1<<20, 1<<10),
			headerDone: make(chan struct{}), sendWake: make(chan struct{}, 1), recvWake: make(chan struct{}, 1)}
		cs.add(st)
		var out []byte
		out = stream.AppendHeader(out, 1, header)
		for i := range n {
			out = stream.AppendData(out, 1, uint64(i), []byte{byte(i)})
		}
		out = stream.AppendEnd(out, 1, uint64(n), 0, nil, trailer)
		batches := splitBatches(t, rng, out)
		order := fmt.Sprint(batchKinds(t, batches))
		got := make(chan error, 1)
		go func() { got <- readWhole(st, n) }()
		for _, b := range batches {
			waitRecvWaiting(st, rng.IntN(2) == 0)
			cs.deliver(b)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("seed %d: batches %s: %v", seed, order, err)
			}
		case <-time.After(10 * time.Second): // a hang, not a measure
			t.Fatalf("seed %d: batches %s: the reader still waits with every frame delivered", seed, order)
		}
	}
}

// readWhole reads a stream whose handler set header h=v, sent n
// one-byte messages 0, 1... and ended with trailer t=w.
func readWhole(st *clientStream, n int) error {
	md, err := st.Header()
	if err != nil || md.Get("h") != "v" {
		return fmt.Errorf("Header() = %v, %v; want h=v", md, err)
	}
	for i := range n {
		m, err := st.Recv()
		if err != nil || len(m) != 1 || m[0] != byte(i) {
			return fmt.Errorf("message %d: %q, %v", i, m, err)
		}
	}
	if _, err := st.Recv(); err != io.EOF {
		return fmt.Errorf("after the messages: %v, want io.EOF", err)
	}
	if tr := st.Trailer(); tr.Get("t") != "w" {
		return fmt.Errorf("Trailer() = %v, want t=w", tr)
	}
	return nil
}

// splitBatches cuts the frames out into batches at random frame
// boundaries and shuffles the batches (answers arrive in any order).
func splitBatches(t *testing.T, rng *rand.Rand, out []byte) [][]byte {
	t.Helper()
	var batches [][]byte
	var rd stream.Reader
	rd.Reset(out)
	var f stream.Frame
	start := 0
	for rd.Next(&f) {
		end := len(out) - len(rd.Rest())
		if end == len(out) || rng.IntN(2) == 0 {
			batches = append(batches, out[start:end:end])
			start = end
		}
	}
	if rd.Err() != nil {
		t.Fatal(rd.Err())
	}
	rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
	return batches
}

func batchKinds(t *testing.T, batches [][]byte) [][]uint8 {
	t.Helper()
	k := make([][]uint8, len(batches))
	for i, b := range batches {
		k[i] = kinds(splitFrames(t, b))
	}
	return k
}

// TestStreamEndWithoutHeaderCanceled: a stream whose End came but not
// yet its Header waits for the Header (TestStreamEndBeforeHeader); a
// cancel meanwhile ends that wait: Header() and Recv return at once with
// the cancel's error.
func TestStreamEndWithoutHeaderCanceled(t *testing.T) {
	cs := &cliSession{s: &Session{}, streams: map[uint64]*clientStream{}}
	st := &clientStream{id: 1, cs: cs, sess: cs.s, stopCtx: func() bool { return true },
		recv:       stream.NewReceiver(16, 1<<20, 1<<10),
		headerDone: make(chan struct{}), sendWake: make(chan struct{}, 1), recvWake: make(chan struct{}, 1)}
	cs.add(st)
	cs.deliver(stream.AppendEnd(nil, 1, 0, 0, nil, nil))
	if cs.streams[1] == nil {
		t.Fatal("the stream was dropped before its Header came")
	}
	got := make(chan error, 2)
	go func() {
		_, err := st.Header()
		got <- err
		_, err = st.Recv()
		got <- err
	}()
	waitRecvWaiting(st, true)
	st.cancelWith(&Error{Code: Canceled, Msg: "canceled"}, Canceled)
	for _, what := range []string{"Header()", "Recv"} {
		select {
		case err := <-got:
			if CodeOf(err) != Canceled {
				t.Fatalf("%s = %v, want Canceled", what, err)
			}
		case <-time.After(10 * time.Second): // a hang, not a measure
			t.Fatalf("%s still waits after the cancel", what)
		}
	}
}
