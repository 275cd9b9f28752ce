package erpc

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestOutOfRangeCodeOnTheWire: a server (of another kind, or hostile) that
// answers with a status code erpc does not know (above Unauthenticated)
// reaches the caller as Unknown with the server's message, never as a
// Code(200) the caller cannot handle.
func TestOutOfRangeCodeOnTheWire(t *testing.T) {
	srv := NewServer()
	var answered atomic.Int64 // a handler handed off under load runs beside the loop's next goroutine
	if err := srv.HandleRaw("Hostile", func(r Request) {
		code := r.runData()[0]
		if err := r.answer(code, []byte("from afar"), false); err == nil {
			answered.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://statusrange-%d", time.Now().UnixNano()))
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
	for code := int(Unauthenticated); code < 256; code++ {
		_, err := s.Call(ctx, "Hostile", []byte{byte(code)}, nil)
		want := Code(code)
		if want > Unauthenticated {
			want = Unknown
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != want || e.Msg != "from afar" {
			t.Fatalf("status %d on the wire arrived as %v; want %v: from afar", code, err, want)
		}
	}
	if n := answered.Load(); n != int64(256-int(Unauthenticated)) {
		t.Fatalf("the server answered %d calls with its own code", n)
	}
}

// TestServerMapsOutOfRangeCode: the server itself answers a handler's
// code above Unauthenticated as Unknown (keeping the message and the
// handler's own error untouched), so even a client that trusts the wire
// sees no unknown code; a nil *Error answers Unknown, saying so.
func TestServerMapsOutOfRangeCode(t *testing.T) {
	for code := int(Unauthenticated) + 1; code < 256; code++ {
		mine := Errorf(Code(code), "odd")
		if e := statusOf(fmt.Errorf("wrapped: %w", mine)); e.Code != Unknown || e.Msg != "odd" || mine.Code != Code(code) {
			t.Fatalf("statusOf(%v) = %v; handler's error now %v", Code(code), e, mine)
		}
	}
	var nilErr *Error
	if e := statusOf(nilErr); e == nil || e.Code != Unknown || e.Msg != "handler returned a nil *erpc.Error" {
		t.Fatalf("statusOf(nil *Error) = %v", e)
	}
}
