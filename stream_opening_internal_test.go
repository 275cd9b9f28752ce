package erpc

import (
	"context"
	"testing"
)

// TestStreamOpeningForgotten: the client remembers a stream while its
// opening is out (its first frames may come before the answer), and
// forgets it once the opening is settled, whether it opened or failed
// (Unimplemented here): an endpoint that opens streams keeps no entry
// per opening.
func TestStreamOpeningForgotten(t *testing.T) {
	srv := NewServer()
	if err := srv.HandleStream("S", func(s ServerStream) error { return s.Send([]byte("x")) }); err != nil {
		t.Fatal(err)
	}
	sess := memStreamPair(t, srv)
	cep := sess.Endpoint()
	failed := 0
	for i := range 20 {
		method := "S"
		if i%2 == 1 {
			method = "Nope"
		}
		st, err := sess.NewStream(context.Background(), method)
		if err != nil {
			if CodeOf(err) != Unimplemented {
				t.Fatal(err)
			}
			failed++
			continue
		}
		if m, err := st.Recv(); err != nil || string(m) != "x" {
			t.Fatalf("Recv = %q, %v", m, err)
		}
	}
	if failed != 10 {
		t.Fatalf("%d openings failed, want 10", failed)
	}
	left := make(chan int)
	if err := cep.Post(func() { left <- len(cep.streams.opening) }); err != nil {
		t.Fatal(err)
	}
	if n := <-left; n != 0 {
		t.Fatalf("%d openings still remembered after all were settled", n)
	}
}
