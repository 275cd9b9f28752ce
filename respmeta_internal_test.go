package erpc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestResponseMetadataOverLimitRefused: a server that sends more than
// MaxMetadataSize of headers and trailers (SetHeader would not let it:
// this one fills them behind its back) fails the call with DataLoss
// naming the limit, counted in the client's MalformedMetadata; one at the
// limit passes.
func TestResponseMetadataOverLimitRefused(t *testing.T) {
	srv := NewServer()
	err := srv.HandleRaw("Over", func(q Request) {
		if err := q.SetHeader(Pairs("k", "v")); err != nil {
			q.RespondError(err)
			return
		}
		m := q.r.respMeta.Load() // the request's, while unanswered
		m.mu.Lock()
		m.header = Metadata{"k": {strings.Repeat("v", len(q.Data()))}}
		m.mu.Unlock()
		q.Respond([]byte("message"))
	})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://respmeta-over-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The longest value of the one header key that stays within the limit.
	at := MaxMetadataSize
	for responseMetadataSize(Metadata{"k": {strings.Repeat("v", at)}}, nil) > MaxMetadataSize {
		at--
	}
	var h Metadata
	resp, err := s.Call(WithResponseMetadata(ctx, &h, nil), "Over", make([]byte, at), nil)
	if err != nil || string(resp) != "message" || len(h["k"][0]) != at {
		t.Fatalf("metadata at the limit: %q %v", resp, err)
	}
	h = nil
	_, err = s.Call(WithResponseMetadata(ctx, &h, nil), "Over", make([]byte, at+1), nil)
	if CodeOf(err) != DataLoss || !strings.Contains(err.Error(), "over MaxMetadataSize (16384 bytes)") || h != nil {
		t.Fatalf("metadata one byte over the limit: %v, header of %d keys", err, len(h))
	}
	if n := s.ep.Stats().MalformedMetadata; n != 1 {
		t.Fatalf("MalformedMetadata = %d, want 1", n)
	}
}
