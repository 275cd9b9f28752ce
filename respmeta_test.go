package erpc_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/wire"
)

// What every handler of metadataServer sets: headers in three calls (the
// last SendHeader), trailers in two, with keys given in capitals, several
// values, and values that are not text.
var (
	hdrParts = []erpc.Metadata{
		{"X-Request-Id": {"r-1"}, "multi": {"a", "b"}},
		{"multi": {"c"}, "blob-bin": {"\x00\xff\x80\x00", ""}},
		{"sent": {"yes"}},
	}
	trlParts = []erpc.Metadata{
		{"cost": {"17"}, "empty-value": {""}},
		{"Cost": {"18"}, "utf8": {"ünï\x00cödé"}},
	}
	wantHeader = erpc.Metadata{"x-request-id": {"r-1"}, "multi": {"a", "b", "c"},
		"blob-bin": {"\x00\xff\x80\x00", ""}, "sent": {"yes"}}
	wantTrailer = erpc.Metadata{"cost": {"17", "18"}, "empty-value": {""}, "utf8": {"ünï\x00cödé"}}
)

// setAll sets hdrParts and trlParts with the given functions, checking
// that after SendHeader the headers are fixed.
func setAll(setH, sendH, setT func(erpc.Metadata) error) error {
	for _, md := range hdrParts[:2] {
		if err := setH(md); err != nil {
			return err
		}
	}
	if err := sendH(hdrParts[2]); err != nil {
		return err
	}
	if err := setH(erpc.Pairs("late", "1")); erpc.CodeOf(err) != erpc.FailedPrecondition {
		return fmt.Errorf("SetHeader after SendHeader: %v", err)
	}
	if err := sendH(erpc.Pairs("late", "1")); erpc.CodeOf(err) != erpc.FailedPrecondition {
		return fmt.Errorf("SendHeader after SendHeader: %v", err)
	}
	for _, md := range trlParts {
		if err := setT(md); err != nil {
			return err
		}
	}
	return nil
}

func ctxSetters(ctx context.Context) (setH, sendH, setT func(erpc.Metadata) error) {
	return func(md erpc.Metadata) error { return erpc.SetHeader(ctx, md) },
		func(md erpc.Metadata) error { return erpc.SendHeader(ctx, md) },
		func(md erpc.Metadata) error { return erpc.SetTrailer(ctx, md) }
}

var errFailAsked = erpc.Errorf(erpc.NotFound, "failing as asked")

// metadataServer serves, in each handler form, a method that sets the
// metadata above and answers with the request, or fails with
// errFailAsked when the request says "fail".
func metadataServer(t *testing.T) *erpc.Server {
	srv := erpc.NewServer()
	handle := func(ctx context.Context, req []byte) ([]byte, error) {
		if err := setAll(ctxSetters(ctx)); err != nil {
			return nil, erpc.Errorf(erpc.Internal, "setting metadata: %v", err)
		}
		if string(req) == "fail" {
			return nil, errFailAsked
		}
		return req, nil
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(srv.Handle("Inline", handle))
	must(srv.Handle("Background", handle, erpc.Background()))
	must(erpc.Register(srv, "Typed", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		out, err := handle(ctx, []byte(req.GetValue()))
		return wrapperspb.String(string(out)), err
	}))
	must(srv.HandleRaw("Raw", func(q erpc.Request) {
		if err := setAll(q.SetHeader, q.SendHeader, q.SetTrailer); err != nil {
			q.RespondError(erpc.Errorf(erpc.Internal, "setting metadata: %v", err))
			return
		}
		ctx := q.Context()
		if string(q.Data()) == "fail" {
			q.RespondError(errFailAsked)
		} else {
			q.Respond(q.Data()) // an echo: the answer is the request's own buffer
		}
		// Spent: no more metadata, through the handle or the context.
		if err := q.SetTrailer(erpc.Pairs("after", "1")); erpc.CodeOf(err) != erpc.FailedPrecondition {
			t.Errorf("SetTrailer after the answer: %v", err)
		}
		if err := erpc.SetHeader(ctx, erpc.Pairs("after", "1")); erpc.CodeOf(err) != erpc.FailedPrecondition {
			t.Errorf("SetHeader after the answer: %v", err)
		}
	}))
	must(srv.HandleRaw("None", func(q erpc.Request) { q.Respond(q.Data()) }))
	return srv
}

// TestResponseMetadataRoundTrip: headers and trailers set by each kind of
// handler (inline, background, typed, raw) reach the caller exactly, keys
// lowered and values byte for byte, with a success answer (whose message
// is unchanged and starts the caller's buffer) and with an error answer
// (whose code and message are unchanged), through WithResponseMetadata
// and Invoke's Header and Trailer options. An answer without metadata
// leaves the caller's variables alone.
func TestResponseMetadataRoundTrip(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, metadataServer(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(what string, h, tr erpc.Metadata) {
		t.Helper()
		if !maps.EqualFunc(h, wantHeader, slices.Equal) || !maps.EqualFunc(tr, wantTrailer, slices.Equal) {
			t.Fatalf("%s: header %q trailer %q,\nwant header %q trailer %q", what, h, tr, wantHeader, wantTrailer)
		}
	}
	for _, method := range []string{"Inline", "Background", "Raw"} {
		for _, fail := range []bool{false, true} {
			req := []byte(strings.Repeat("payload ", 300)) // several packets
			if fail {
				req = []byte("fail")
			}
			buf := make([]byte, 0, 8<<10)
			var h, tr erpc.Metadata
			resp, err := s.Call(erpc.WithResponseMetadata(ctx, &h, &tr), method, req, buf)
			what := fmt.Sprintf("%s (fail %v)", method, fail)
			if fail {
				var e *erpc.Error
				if !errors.As(err, &e) || e.Code != erpc.NotFound || e.Msg != errFailAsked.Msg {
					t.Fatalf("%s: %v", what, err)
				}
			} else if err != nil || string(resp) != string(req) || &resp[0] != &buf[:1][0] {
				t.Fatalf("%s: %d bytes, err %v, in the caller's buffer: %v", what, len(resp), err, err == nil && &resp[0] == &buf[:1][0])
			}
			check(what, h, tr)
		}
	}
	for _, fail := range []bool{false, true} {
		req := "typed"
		if fail {
			req = "fail"
		}
		var h, tr erpc.Metadata
		resp, err := erpc.Invoke[wrapperspb.StringValue](ctx, s, "Typed", wrapperspb.String(req), erpc.Header(&h), erpc.Trailer(&tr))
		if fail != (err != nil) || !fail && resp.GetValue() != req || fail && erpc.CodeOf(err) != erpc.NotFound {
			t.Fatalf("Typed (fail %v): %v %v", fail, resp, err)
		}
		check(fmt.Sprintf("Typed (fail %v)", fail), h, tr)
	}
	var h, tr erpc.Metadata
	if _, err := s.Call(erpc.WithResponseMetadata(ctx, &h, &tr), "None", []byte("x"), nil); err != nil || h != nil || tr != nil {
		t.Fatalf("an answer without metadata: %v, header %q trailer %q", err, h, tr)
	}
	// Only the header wanted: the trailer travels and is dropped.
	h = nil
	if _, err := s.Call(erpc.WithResponseMetadata(ctx, &h, nil), "Raw", []byte("x"), nil); err != nil || h.Get("sent") != "yes" {
		t.Fatalf("header only: %v %q", err, h)
	}
	if err := erpc.SetHeader(ctx, erpc.Pairs("k", "v")); erpc.CodeOf(err) != erpc.Internal || !strings.Contains(err.Error(), "not a handler's") {
		t.Fatalf("SetHeader on a caller's context: %v", err)
	}
}

// TestResponseMetadataLimit: a handler's headers and trailers may fill
// MaxMetadataSize exactly and arrive whole; an addition one byte larger
// fails with ResourceExhausted naming the limit and adds nothing (the
// handler then sets the smaller one).
func TestResponseMetadataLimit(t *testing.T) {
	n := newMemNet()
	// A header of one key and a trailer whose one value fills the rest.
	header := erpc.Metadata{"h": {strings.Repeat("h", 6000)}}
	var trailer, over erpc.Metadata
	for v := erpc.MaxMetadataSize; v > 0 && trailer == nil; v-- {
		tr := erpc.Metadata{"t": {strings.Repeat("\xfe", v)}}
		if wire.ResponseMetadataSize([]string{"h"}, header, []string{"t"}, tr) == erpc.MaxMetadataSize {
			trailer, over = tr, erpc.Metadata{"t": {strings.Repeat("\xfe", v+1)}}
		}
	}
	if size := wire.ResponseMetadataSize([]string{"h"}, header, []string{"t"}, over); size != erpc.MaxMetadataSize+1 {
		t.Fatalf("the larger trailer makes %d bytes", size)
	}
	overErr := make(chan error, 1)
	srv := erpc.NewServer()
	srv.HandleRaw("Full", func(q erpc.Request) {
		if err := q.SetHeader(header); err != nil {
			q.RespondError(err)
			return
		}
		overErr <- q.SetTrailer(over)
		if err := q.SetTrailer(trailer); err != nil {
			q.RespondError(err)
			return
		}
		q.Respond([]byte("ok"))
	})
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, srv))
	var h, tr erpc.Metadata
	resp, err := s.Call(erpc.WithResponseMetadata(context.Background(), &h, &tr), "Full", nil, nil)
	if err != nil || string(resp) != "ok" {
		t.Fatalf("metadata at the limit: %q %v", resp, err)
	}
	if !maps.EqualFunc(h, header, slices.Equal) || !maps.EqualFunc(tr, trailer, slices.Equal) {
		t.Fatalf("metadata at the limit arrived as %d header keys, %d trailer keys", len(h), len(tr))
	}
	err = <-overErr
	if erpc.CodeOf(err) != erpc.ResourceExhausted || !strings.Contains(err.Error(), "MaxMetadataSize (16384 bytes)") {
		t.Fatalf("one byte over the limit: %v", err)
	}
}

// TestResponseMetadataAllocs: a caller that asks for response metadata
// (WithResponseMetadata) from a handler that sets none allocates nothing
// per call, as a call without the request is (TestCallAllocs): the answer
// carries no flag, so nothing of response metadata runs.
func TestResponseMetadataAllocs(t *testing.T) {
	n := newMemNet()
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, rawEcho(t)))
	var h, tr erpc.Metadata
	ctx := erpc.WithResponseMetadata(context.Background(), &h, &tr)
	req, resp := make([]byte, 32), make([]byte, 0, 32)
	for range 300 {
		resp, _ = s.Call(ctx, "Echo", req, resp)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		if resp, err = s.Call(ctx, "Echo", req, resp); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0.05 || h != nil || tr != nil {
		t.Fatalf("%.3f allocations per call asking for metadata, want 0 (header %q trailer %q)", allocs, h, tr)
	}
}

// TestResponseMetadataRacingAnswer: goroutines add trailers while another
// answers: every addition that returned nil arrives with the answer, and
// none that failed does (the answer takes them at one instant).
func TestResponseMetadataRacingAnswer(t *testing.T) {
	checkLeaks(t)
	n := newMemNet()
	accepted := make(chan []string, 1)
	srv := erpc.NewServer()
	srv.HandleRaw("Race", func(q erpc.Request) {
		var mu sync.Mutex
		var ok []string
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 50 {
					v := fmt.Sprintf("g%d-%d", g, i)
					if q.SetTrailer(erpc.Pairs("v", v)) == nil {
						mu.Lock()
						ok = append(ok, v)
						mu.Unlock()
					}
				}
			})
		}
		runtime.Gosched()
		q.Respond(nil)
		wg.Wait()
		accepted <- ok
	}, erpc.Background())
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	some, all := 0, 0
	for i := range 50 {
		var tr erpc.Metadata
		if _, err := s.Call(erpc.WithResponseMetadata(ctx, nil, &tr), "Race", nil, nil); err != nil {
			t.Fatal(err)
		}
		want := <-accepted
		got := slices.Clone(tr["v"])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("call %d: %d trailer values arrived, %d accepted", i, len(got), len(want))
		}
		switch len(want) {
		case 200:
			all++
		case 0:
		default:
			some++
		}
	}
	t.Logf("of 50 answers, %d raced some additions, %d took all", some, all)
}

// statsRecorder keeps the server-side CallEnds a StatsHandler sees.
type statsRecorder struct{ ends chan erpc.CallEnd }

func (r statsRecorder) CallBegin(ctx context.Context, _ erpc.CallInfo) context.Context { return ctx }
func (r statsRecorder) CallEnd(_ context.Context, info erpc.CallInfo, end erpc.CallEnd) {
	if info.Server {
		r.ends <- end
	}
}
func (statsRecorder) SessionEvent(erpc.SessionEvent) {}

// TestResponseMetadataStatsHandler: a server's StatsHandler reads an
// error answer's code and message, not the metadata ahead of them.
func TestResponseMetadataStatsHandler(t *testing.T) {
	n := newMemNet()
	rec := statsRecorder{make(chan erpc.CallEnd, 4)}
	s := dialT(t, n, n.Listen(t, nil), n.Listen(t, metadataServer(t), erpc.WithStatsHandler(rec)))
	if _, err := s.Call(context.Background(), "Raw", []byte("fail"), nil); erpc.CodeOf(err) != erpc.NotFound {
		t.Fatal(err)
	}
	end := <-rec.ends
	var e *erpc.Error
	if end.Code != erpc.NotFound || !errors.As(end.Err, &e) || e.Code != erpc.NotFound || e.Msg != errFailAsked.Msg {
		t.Fatalf("the StatsHandler saw %+v", end)
	}
}
