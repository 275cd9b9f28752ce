package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestTypedNilErrorFromHandler: a handler that returns a nil *erpc.Error
// in its error (a non-nil interface) is answered with Unknown and a
// message that says so, not a panic (which would answer Internal); the
// same through Register.
func TestTypedNilErrorFromHandler(t *testing.T) {
	srv := erpc.NewServer()
	must(t, srv.Handle("Raw", func(context.Context, []byte) ([]byte, error) {
		var e *erpc.Error
		return nil, e
	}))
	must(t, erpc.Register(srv, "Typed", func(context.Context, *[]byte) (*[]byte, error) {
		var e *erpc.Error
		return nil, e
	}))
	s := dialServer(t, srv)
	for _, method := range []string{"Raw", "Typed"} {
		var err error
		if method == "Raw" {
			_, err = s.Call(context.Background(), method, nil, nil)
		} else {
			_, err = erpc.Invoke[[]byte](context.Background(), s, method, &[]byte{})
		}
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.Unknown || !strings.Contains(e.Msg, "nil *erpc.Error") {
			t.Errorf("%s: a handler's nil *erpc.Error arrived as %v; want Unknown naming it", method, err)
		}
	}
}

// TestTypedNilErrorHelpers: the functions that read errors take a nil
// *erpc.Error without panicking.
func TestTypedNilErrorHelpers(t *testing.T) {
	var e *erpc.Error
	var err error = e
	if c := erpc.CodeOf(err); c != erpc.Unknown {
		t.Errorf("CodeOf(nil *Error) = %v; want Unknown", c)
	}
	if c := erpc.CodeOf(fmt.Errorf("wrapped: %w", err)); c != erpc.Unknown {
		t.Errorf("CodeOf(wrapped nil *Error) = %v; want Unknown", c)
	}
	if errors.Is(err, erpc.ErrUnavailable) || erpc.NotExecuted(err) {
		t.Error("a nil *Error matches a code or NotExecuted")
	}
	if !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil *Error says %q", err.Error())
	}
}

// TestOutOfRangeCodeFromHandler: a handler's code above Unauthenticated
// reaches the client as Unknown, with the handler's message.
func TestOutOfRangeCodeFromHandler(t *testing.T) {
	for _, code := range []erpc.Code{erpc.Unauthenticated + 1, 100, 200, 255} {
		srv := erpc.NewServer()
		must(t, srv.Handle("Odd", func(context.Context, []byte) ([]byte, error) {
			return nil, erpc.Errorf(code, "odd code")
		}))
		s := dialServer(t, srv)
		_, err := s.Call(context.Background(), "Odd", nil, nil)
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.Unknown || e.Msg != "odd code" {
			t.Errorf("a handler's %v arrived as %v; want Unknown: odd code", code, err)
		}
	}
	srv := erpc.NewServer()
	must(t, srv.Handle("Edge", func(context.Context, []byte) ([]byte, error) {
		return nil, erpc.Errorf(erpc.Unauthenticated, "last code")
	}))
	if _, err := dialServer(t, srv).Call(context.Background(), "Edge", nil, nil); erpc.CodeOf(err) != erpc.Unauthenticated {
		t.Errorf("Unauthenticated arrived as %v", err)
	}
}

// dialServer serves srv on a fresh mem:// address and dials it; both are
// closed when the test ends.
func dialServer(t *testing.T, srv *erpc.Server) *erpc.Session {
	t.Helper()
	ep := listenT(t, srv, fmt.Sprintf("mem://statusedge-%d", time.Now().UnixNano()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
