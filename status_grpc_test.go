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

	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	_ "google.golang.org/protobuf/types/known/anypb" // google.protobuf.Any, which Status imports
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
)

// A gRPC status error as grpc's status.Error makes one, without grpc: an
// error whose GRPCStatus method returns a status whose Proto method
// returns a google.rpc.Status message (built here from its descriptor).

var rpcStatusDesc = func() protoreflect.MessageDescriptor {
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	field := func(name string, n int32, l descriptorpb.FieldDescriptorProto_Label, t descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: &name, Number: &n, Label: &l, Type: &t, JsonName: &name}
		if typeName != "" {
			f.TypeName = &typeName
		}
		return f
	}
	name, pkg, syntax, msg := "google/rpc/status.proto", "google.rpc", "proto3", "Status"
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: &name, Package: &pkg, Syntax: &syntax,
		Dependency: []string{"google/protobuf/any.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{Name: &msg, Field: []*descriptorpb.FieldDescriptorProto{
			field("code", 1, opt, descriptorpb.FieldDescriptorProto_TYPE_INT32, ""),
			field("message", 2, opt, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
			field("details", 3, rep, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".google.protobuf.Any"),
		}}},
	}, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	return fd.Messages().Get(0)
}()

type fakeDetail struct {
	url string
	val []byte
}

// fakeStatus is grpc's *status.Status in shape: Proto gives the message.
type fakeStatus struct{ p *dynamicpb.Message }

func (s *fakeStatus) Proto() *dynamicpb.Message { return s.p }

// fakeStatusError is grpc's status error in shape.
type fakeStatusError struct{ st *fakeStatus }

func (e *fakeStatusError) Error() string           { return "rpc error: a fake status" }
func (e *fakeStatusError) GRPCStatus() *fakeStatus { return e.st }

func newFakeStatusError(code int32, msg string, details ...fakeDetail) *fakeStatusError {
	m := dynamicpb.NewMessage(rpcStatusDesc)
	f := rpcStatusDesc.Fields()
	m.Set(f.ByNumber(1), protoreflect.ValueOfInt32(code))
	m.Set(f.ByNumber(2), protoreflect.ValueOfString(msg))
	list := m.Mutable(f.ByNumber(3)).List()
	for _, d := range details {
		a := list.NewElement().Message()
		af := a.Descriptor().Fields()
		a.Set(af.ByNumber(1), protoreflect.ValueOfString(d.url))
		a.Set(af.ByNumber(2), protoreflect.ValueOfBytes(d.val))
		list.Append(protoreflect.ValueOfMessage(a))
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
	rng := rand.New(rand.NewPCG(29, 5))
	for i := range 300 {
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
		key := fmt.Sprint(i)
		errs[key] = newFakeStatusError(code, msg, details...)
		wantCode := erpc.Code(code)
		if code == 0 || code > 16 {
			wantCode = erpc.Unknown
		}
		if got := erpc.CodeOf(errs[key]); got != wantCode {
			t.Fatalf("CodeOf(status %d) = %v, want %v", code, got, wantCode)
		}
		_, err := s.Call(ctx, "Fail", []byte(key), nil)
		var e *erpc.Error
		wantMsg := msg
		if wantCode == erpc.Canceled || wantCode == erpc.DeadlineExceeded {
			// the caller names the call whose handler gave up
			wantMsg = fmt.Sprintf("call %q to %s: the server's handler: %s", "Fail", s.Target(), msg)
		}
		if !errors.As(err, &e) || e.Code != wantCode || e.Msg != wantMsg {
			t.Fatalf("status %d %q: the caller got %#v, want %v %q", code, msg, err, wantCode, msg)
		}
		if len(e.Details) != len(want) {
			t.Fatalf("status %d: %d details, want %d", code, len(e.Details), len(want))
		}
		for j, d := range e.Details {
			if d.Type != want[j].Type || !bytes.Equal(d.Value, want[j].Value) {
				t.Fatalf("status %d detail %d = %q %x, want %q %x", code, j, d.Type, d.Value, want[j].Type, want[j].Value)
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

func (otherStatus) Error() string                  { return "other status" }
func (otherStatus) GRPCStatus() *dynamicpb.Message { return nil }

type notAStatusProto struct{}

func (notAStatusProto) Proto() *descriptorpb.FileDescriptorProto {
	return &descriptorpb.FileDescriptorProto{}
}

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

// TestTypedUnimplementedFromHandler: a typed handler that answers
// Unimplemented (a gRPC status, say) keeps its message; only the server's
// own "no such method" names the types the caller asked for.
func TestTypedUnimplementedFromHandler(t *testing.T) {
	srv := erpc.NewServer()
	err := erpc.Register(srv, "Feature", func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return nil, newFakeStatusError(int32(erpc.Unimplemented), "not in this edition")
	})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://typedunimpl-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = erpc.Invoke[wrapperspb.StringValue](ctx, s, "Feature", wrapperspb.String("x"))
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.Unimplemented || e.Msg != "not in this edition" || erpc.NotExecuted(err) {
		t.Fatalf("the handler's Unimplemented arrived as %v", err)
	}
	_, err = erpc.Invoke[wrapperspb.BytesValue](ctx, s, "Feature", wrapperspb.String("x"))
	if !errors.As(err, &e) || e.Code != erpc.Unimplemented || !strings.Contains(e.Msg, "other types does not match") || !erpc.NotExecuted(err) {
		t.Fatalf("a call with other types got %v", err)
	}
}
