package erpc

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestStreamMemoryBound: whatever the pace of the reader, a stream's
// receivers (the client's and the handler's) never hold more than their
// window: 8 messages, and 4000 bytes plus the one message that may start
// below the byte limit.
func TestStreamMemoryBound(t *testing.T) {
	const msgs, bytes, size = 8, 4000, 700
	var handlerHigh [2]uint64
	srv := NewServer()
	if err := srv.HandleStream("M", func(s ServerStream) error {
		st := s.(*serverStream)
		for i := 0; ; i++ {
			if _, err := s.Recv(); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
			if i%10 == 0 {
				time.Sleep(time.Millisecond) // a slow reader
			}
		}
		st.mu.Lock()
		n, b := st.recv.HighWater()
		st.mu.Unlock()
		handlerHigh = [2]uint64{uint64(n), b}
		msg := make([]byte, size)
		for range 200 {
			if err := s.Send(msg); err != nil {
				return err
			}
		}
		return nil
	}, StreamWindow(msgs, bytes)); err != nil {
		t.Fatal(err)
	}
	sess := memStreamPair(t, srv)
	cs, err := sess.NewStream(context.Background(), "M", StreamWindow(msgs, bytes))
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, size)
	for range 200 {
		if err := cs.Send(msg); err != nil {
			t.Fatal(err)
		}
	}
	cs.CloseSend()
	st := cs.(*clientStream)
	for i := 0; ; i++ {
		if _, err := cs.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	st.mu.Lock()
	n, b := st.recv.HighWater()
	st.mu.Unlock()
	for side, hw := range map[string][2]uint64{"client": {uint64(n), b}, "handler": handlerHigh} {
		if hw[0] > msgs || hw[1] > bytes+size {
			t.Errorf("the %s held %d messages, %d bytes at once: window %d, %d+%d", side, hw[0], hw[1], msgs, bytes, size)
		}
		if hw[0] < 2 {
			t.Errorf("the %s never buffered: the reader was not slow enough to test anything", side)
		}
	}
}

// memStreamPair serves srv on a fresh memnet and dials it from a second
// endpoint; both close when the test ends.
func memStreamPair(t *testing.T, srv *Server) *Session {
	t.Helper()
	net := memnet.NewNetwork(1, memnet.LinkConfig{})
	str, _ := net.Listen("")
	sep, err := srv.Listen("", WithTransport(str))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sep.Close() })
	ctr, _ := net.Listen("")
	cep, err := Listen("", WithTransport(ctr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cep.Close() })
	sess, err := cep.Dial(context.Background(), sep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return sess
}
