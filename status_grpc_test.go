package erpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// A gRPC status error as grpc's status.Error makes one, with neither grpc
// nor protobuf: an error whose GRPCStatus method returns a status whose
// Proto method returns a message with google.rpc.Status's generated
// getters. The getters are not nil-safe (generated ones are), so a read
// that calls one on a nil message or detail panics and the test sees it.
// contrib/grpc's TestStatusBothWaysNoServerInterceptor is the proof
// against grpc's real types.

// rpcStatus is genproto's spb.Status in shape.
type rpcStatus struct {
	code    int32
	message string
	details []*rpcAny
}

func (s *rpcStatus) GetCode() int32        { return s.code }
func (s *rpcStatus) GetMessage() string    { return s.message }
func (s *rpcStatus) GetDetails() []*rpcAny { return s.details }

// rpcAny is anypb.Any in shape.
type rpcAny struct {
	typeURL string
	value   []byte
}

func (a *rpcAny) GetTypeUrl() string { return a.typeURL }
func (a *rpcAny) GetValue() []byte   { return a.value }

type fakeDetail struct {
	url string
	val []byte
}

// fakeStatus is grpc's *status.Status in shape: Proto gives the message.
type fakeStatus struct{ p *rpcStatus }

func (s *fakeStatus) Proto() *rpcStatus { return s.p }

// fakeStatusError is grpc's status error in shape.
type fakeStatusError struct{ st *fakeStatus }

func (e *fakeStatusError) Error() string           { return "rpc error: a fake status" }
func (e *fakeStatusError) GRPCStatus() *fakeStatus { return e.st }

func newFakeStatusError(code int32, msg string, details ...fakeDetail) *fakeStatusError {
	m := &rpcStatus{code: code, message: msg}
	for _, d := range details {
		m.details = append(m.details, &rpcAny{d.url, d.val})
	}
	return &fakeStatusError{&fakeStatus{m}}
}

// serveFailing serves "Fail", which returns the error fail gives for the
// request, with no interceptor, and dials it.
func serveFailing(t *testing.T, fail func(req []byte) error) (context.Context, *erpc.Session) {
	t.Helper()
	srv := erpc.NewServer()
	if err := srv.Handle("Fail", func(_ context.Context, req []byte) ([]byte, error) { return nil, fail(req) }); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://grpcstatus-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ctx, s
}

// TestGRPCStatusErrorCrossesWithoutGlue: a handler's gRPC status error
// reaches the erpc caller with its code, message and details, with no
// interceptor; random codes (0 and those above 16 become Unknown),
// messages and details.
func TestGRPCStatusErrorCrossesWithoutGlue(t *testing.T) {
	errs := map[string]*fakeStatusError{}
	ctx, s := serveFailing(t, func(req []byte) error { return errs[string(req)] })
	for seed := range uint64(6) {
		crossWithoutGlue(t, ctx, s, errs, seed)
	}
}

// crossWithoutGlue sends 60 random status errors from seed through the
// handler of serveFailing that answers with errs; some hold nil details,
// which are skipped.
func crossWithoutGlue(t *testing.T, ctx context.Context, s *erpc.Session, errs map[string]*fakeStatusError, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(29, 5+seed))
	for i := range 60 {
		code := rng.Int32N(20)
		msg := fmt.Sprintf("failure %d %x", i, rng.Uint64())
		if i%7 == 0 {
			msg = "\x00starts with a zero byte"
		}
		var details []fakeDetail
		var want []erpc.Detail
		for j := range rng.IntN(4) {
			val := make([]byte, rng.IntN(300))
			for k := range val {
				val[k] = byte(rng.Uint32())
			}
			name := fmt.Sprintf("test.Detail%d", j)
			url := "type.googleapis.com/" + name
			if j == 2 {
				url, name = "example.com/custom/"+name, "example.com/custom/"+name // kept whole
			}
			details = append(details, fakeDetail{url, val})
			want = append(want, erpc.Detail{Type: name, Value: val})
		}
		key := fmt.Sprint(seed, "/", i)
		errs[key] = newFakeStatusError(code, msg, details...)
		for range rng.IntN(3) { // nil details, anywhere: skipped
			ds := errs[key].st.p.details
			at := rng.IntN(len(ds) + 1)
			errs[key].st.p.details = append(ds[:at], append([]*rpcAny{nil}, ds[at:]...)...)
		}
		wantCode := erpc.Code(code)
		if code == 0 || code > 16 {
			wantCode = erpc.Unknown
		}
		if got := erpc.CodeOf(errs[key]); got != wantCode {
			t.Fatalf("%s: CodeOf(status %d) = %v, want %v", key, code, got, wantCode)
		}
		_, err := s.Call(ctx, "Fail", []byte(key), nil)
		var e *erpc.Error
		wantMsg := msg
		if wantCode == erpc.Canceled || wantCode == erpc.DeadlineExceeded {
			// the caller names the call whose handler gave up
			wantMsg = fmt.Sprintf("call %q to %s: the server's handler: %s", "Fail", s.Target(), msg)
		}
		if !errors.As(err, &e) || e.Code != wantCode || e.Msg != wantMsg {
			t.Fatalf("%s: status %d %q: the caller got %#v, want %v %q", key, code, msg, err, wantCode, msg)
		}
		if len(e.Details) != len(want) {
			t.Fatalf("%s: status %d: %d details, want %d", key, code, len(e.Details), len(want))
		}
		for j, d := range e.Details {
			if d.Type != want[j].Type || !bytes.Equal(d.Value, want[j].Value) {
				t.Fatalf("%s: status %d detail %d = %q %x, want %q %x", key, code, j, d.Type, d.Value, want[j].Type, want[j].Value)
			}
		}
	}
}

// TestGRPCStatusErrorWrapped: a status inside a wrapping error keeps its
// code and details, and takes the whole error's text as its message, as
// grpc's status.FromError does; errors.Join's are found too.
func TestGRPCStatusErrorWrapped(t *testing.T) {
	st := newFakeStatusError(5, "no row", fakeDetail{"type.googleapis.com/test.Why", []byte{1, 2}})
	wrapped := fmt.Errorf("lookup: %w", st)
	joined := errors.Join(errors.New("first"), fmt.Errorf("second: %w", st))
	cases := map[string]error{"wrapped": wrapped, "joined": joined}
	ctx, s := serveFailing(t, func(req []byte) error { return cases[string(req)] })
	for name, sent := range cases {
		_, err := s.Call(ctx, "Fail", []byte(name), nil)
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.NotFound || e.Msg != sent.Error() {
			t.Fatalf("%s: the caller got %v, want NotFound %q", name, err, sent.Error())
		}
		if len(e.Details) != 1 || e.Details[0].Type != "test.Why" || !bytes.Equal(e.Details[0].Value, []byte{1, 2}) {
			t.Fatalf("%s: details %+v", name, e.Details)
		}
		if erpc.CodeOf(sent) != erpc.NotFound {
			t.Fatalf("%s: CodeOf = %v", name, erpc.CodeOf(sent))
		}
	}
}

// otherStatus has a GRPCStatus method whose status is not a gRPC one.
type otherStatus struct{}

func (otherStatus) Error() string                { return "other status" }
func (otherStatus) GRPCStatus() *strings.Builder { return nil }

// notAStatusProto's Proto gives a message that is no google.rpc.Status.
type notAStatusProto struct{}

func (notAStatusProto) Proto() *rpcAny { return &rpcAny{typeURL: "not a status"} }

type wrongProtoStatus struct{}

func (wrongProtoStatus) Error() string                { return "wrong proto" }
func (wrongProtoStatus) GRPCStatus() *notAStatusProto { return &notAStatusProto{} }

// TestNotAGRPCStatus: an error whose status is nil, or not a
// google.rpc.Status, is Unknown with its text, as grpc's status.FromError
// makes it; an *erpc.Error wins over a status further down the chain.
func TestNotAGRPCStatus(t *testing.T) {
	cases := map[string]error{
		"nil status":   &fakeStatusError{st: nil},
		"nil proto":    &fakeStatusError{st: &fakeStatus{}},
		"other":        otherStatus{},
		"wrong proto":  wrongProtoStatus{},
		"nil receiver": (*fakeStatusError)(nil),
	}
	ctx, s := serveFailing(t, func(req []byte) error {
		if string(req) == "erpc first" {
			return &erpc.Error{Code: erpc.Aborted, Msg: "erpc's", Cause: newFakeStatusError(5, "grpc's")}
		}
		return cases[string(req)]
	})
	for name, sent := range cases {
		_, err := s.Call(ctx, "Fail", []byte(name), nil)
		var e *erpc.Error
		if !errors.As(err, &e) || e.Code != erpc.Unknown || e.Msg != sent.Error() || len(e.Details) != 0 {
			t.Fatalf("%s: the caller got %v, want Unknown %q", name, err, sent.Error())
		}
	}
	_, err := s.Call(ctx, "Fail", []byte("erpc first"), nil)
	if erpc.CodeOf(err) != erpc.Aborted {
		t.Fatalf("an *erpc.Error wrapping a status: %v, want Aborted", err)
	}
}
