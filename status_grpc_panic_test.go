package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// A status error whose methods panic at one step of the read (plan.at),
// counting the panics.
type panicPlan struct {
	at   string
	hits atomic.Int32
}

func (p *panicPlan) step(name string) {
	if p.at == name {
		p.hits.Add(1)
		panic(name + " broke")
	}
}

type (
	panickyError  struct{ p *panicPlan }
	panickyStatus struct{ p *panicPlan }
	panickyProto  struct{ p *panicPlan }
	panickyAny    struct{ p *panicPlan }
)

func (e *panickyError) Error() string { return "panicky" }
func (e *panickyError) GRPCStatus() *panickyStatus {
	e.p.step("GRPCStatus")
	return &panickyStatus{e.p}
}
func (s *panickyStatus) Proto() *panickyProto { s.p.step("Proto"); return &panickyProto{s.p} }
func (m *panickyProto) GetCode() int32        { m.p.step("GetCode"); return 5 }
func (m *panickyProto) GetMessage() string    { m.p.step("GetMessage"); return "panicky" }
func (m *panickyProto) GetDetails() []*panickyAny {
	m.p.step("GetDetails")
	return []*panickyAny{{m.p}}
}
func (a *panickyAny) GetTypeUrl() string { a.p.step("GetTypeUrl"); return "u" }
func (a *panickyAny) GetValue() []byte   { a.p.step("GetValue"); return nil }

// TestGRPCStatusPanicIsInternal: a method of a status error that panics
// while erpc reads the status (GRPCStatus, Proto, any getter) gives an
// Internal error naming the panic, from CodeOf and to the caller, and
// ends nothing: not the server when the handler returns the error, nor
// the process when a HandleRaw handler answers with it from a goroutine
// of its own, where no recover of erpc's runs (on the code before, that
// panic ended the test binary).
func TestGRPCStatusPanicIsInternal(t *testing.T) {
	plans := map[string]*panicPlan{}
	srv := erpc.NewServer()
	if err := srv.Handle("Fail", func(_ context.Context, req []byte) ([]byte, error) {
		return nil, &panickyError{plans[string(req)]}
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.HandleRaw("FailLater", func(r erpc.Request) {
		p := plans[string(r.Data())]
		go func() { _ = r.RespondError(&panickyError{p}) }()
	}); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://grpcpanic-%d", time.Now().UnixNano()))
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
	for _, at := range []string{"GRPCStatus", "Proto", "GetCode", "GetMessage", "GetDetails", "GetTypeUrl", "GetValue"} {
		p := &panicPlan{at: at}
		plans[at] = p
		want := "reading the gRPC status of a *erpc_test.panickyError error panicked: " + at + " broke"
		if got := erpc.CodeOf(&panickyError{p}); got != erpc.Internal {
			t.Fatalf("%s: CodeOf = %v, want Internal", at, got)
		}
		for i, method := range []string{"Fail", "FailLater"} {
			_, err := s.Call(ctx, method, []byte(at), nil)
			var e *erpc.Error
			if !errors.As(err, &e) || e.Code != erpc.Internal || e.Msg != want {
				t.Fatalf("%s %s: the caller got %v, want Internal %q", at, method, err, want)
			}
			if n := p.hits.Load(); n != int32(i+2) {
				t.Fatalf("%s %s: %d panics, want %d", at, method, n, i+2)
			}
		}
	}
}
