package erpc_test

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTCPBurst: a burst of tiny calls over TCP, 20000 posted at
// once through Session.Go over 4 sessions of a listening client: every one
// completes with its own answer, none twice, and the handler runs once
// per call.
func TestReviewTCPBurst(t *testing.T) {
	var runs [20000]atomic.Int32
	srv := erpc.NewServer()
	if err := srv.HandleRaw("Tiny", func(r erpc.Request) {
		runs[binary.BigEndian.Uint32(r.Data())].Add(1)
		r.Respond(r.Data())
	}); err != nil {
		t.Fatal(err)
	}
	sep, err := srv.Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sep.Close()
	cep, err := erpc.Listen("tcp://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ss []*erpc.Session
	for range 4 {
		s, err := cep.Dial(ctx, sep.Target())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ss = append(ss, s)
	}
	var wg sync.WaitGroup
	var bad, done atomic.Int32
	var answered [20000]atomic.Int32
	wg.Add(len(runs))
	for i := range runs {
		req := binary.BigEndian.AppendUint32(nil, uint32(i))
		ss[i%len(ss)].Go("Tiny", req, nil, func(resp []byte, err error) {
			defer wg.Done()
			done.Add(1)
			if err != nil || len(resp) != 4 || binary.BigEndian.Uint32(resp) != uint32(i) {
				bad.Add(1)
				return
			}
			answered[i].Add(1)
		})
	}
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("only %d of %d calls completed in 60 s", done.Load(), len(runs))
	}
	twice := 0
	for i := range runs {
		if runs[i].Load() > 1 || answered[i].Load() > 1 {
			twice++
		}
	}
	if bad.Load() != 0 || twice != 0 {
		t.Fatalf("%d of %d calls failed or got another's answer; %d ran or were answered more than once", bad.Load(), len(runs), twice)
	}
}
