package erpc

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport/memnet"
)

// TestLoopSpinsToNearDeadlines: a loop whose next deadline is closer than
// parkResolution, or whose request left less than that ago, keeps
// spinning instead of parking (Go's netpoller would sleep a whole
// millisecond or more, and the answer's RTT sample would carry the
// wake-up). The deadlines come from the pacer: a 256 KiB call over a link
// with 300 us of delay, so congestion control runs (memnet is not
// same-host) and slow start spaces its packets by a fraction of the RTT;
// the answers due from 32-byte calls on the same link. The client's loop
// is told to park as soon as it is idle (WithSpin(0)).
func TestLoopSpinsToNearDeadlines(t *testing.T) {
	net := memnet.NewNetwork(1, memnet.LinkConfig{Delay: 300 * time.Microsecond})
	str, err := net.Listen("server")
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := net.Listen("client")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer()
	srv.HandleRaw("Sink", func(r Request) { r.Respond(nil) })
	sep, err := srv.Listen("", WithTransport(str))
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	cep, err := Listen("", WithTransport(ctr), WithSpin(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cep.Dial(ctx, sep.Target())
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{256 << 10, 256 << 10, 32, 32, 32} {
		if _, err := s.Call(ctx, "Sink", bytes.Repeat([]byte{7}, size), nil); err != nil {
			t.Fatal(err)
		}
	}
	var spins, short int
	done := make(chan struct{})
	if err := cep.Post(func() {
		spins, short = cep.loop.deadlineSpins, cep.loop.shortParks
		close(done)
	}); err != nil {
		t.Fatal(err)
	}
	<-done
	if short != 0 {
		t.Fatalf("the loop parked %d times for a deadline or an answer due within parkResolution (and spun for %d)", short, spins)
	}
	if spins == 0 {
		t.Fatal("the loop never had a deadline or an answer due within parkResolution: the test exercised nothing")
	}
}
