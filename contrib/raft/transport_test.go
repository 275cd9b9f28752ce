package raft

//lint:file-ignore SA1019 raft's deprecated Leader and Candidate fields are still carried: raft servers of older protocol versions read them

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/contrib/raft/internal/leaktest"
	"github.com/erpc-go/erpc/transport/memnet"
	"github.com/hashicorp/raft"
)

// memAddr returns a fresh name on erpc's in-process network. The tests run
// on memnet so they do not depend on the host's UDP stack; the benchmarks
// and the example use UDP loopback.
func memAddr() string {
	return fmt.Sprintf("mem://raft-test-%d", memSeq.Add(1))
}

var memSeq atomic.Int64

func newTransport(t *testing.T, cfg Config) *Transport {
	t.Helper()
	tr, err := New(memAddr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// serve answers every RPC on tr with fn's response until stop closes.
func serve(tr *Transport, stop <-chan struct{}, fn func(rpc raft.RPC) (any, error)) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case rpc := <-tr.Consumer():
				resp, err := fn(rpc)
				rpc.Respond(resp, err)
			case <-stop:
				return
			}
		}
	}()
	return &wg
}

func hdr(addr string) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("id-" + addr), Addr: []byte(addr)}
}

func sampleAppend(addr string) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader:    hdr(addr),
		Term:         10,
		Leader:       []byte(addr),
		PrevLogEntry: 100,
		PrevLogTerm:  4,
		Entries: []*raft.Log{
			{Index: 101, Term: 4, Type: raft.LogCommand, Data: []byte("first"), Extensions: []byte{1, 2}, AppendedAt: time.Unix(0, 1_700_000_000_123_456_789)},
			{Index: 102, Term: 4, Type: raft.LogNoop, Data: []byte{}, Extensions: nil},
			{Index: 103, Term: 5, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte("x"), 3000), AppendedAt: time.Unix(12, 34)},
		},
		LeaderCommitIndex: 90,
	}
}

func TestRoundTrips(t *testing.T) {
	a := newTransport(t, Config{})
	b := newTransport(t, Config{})
	addr := string(a.LocalAddr())

	cases := []struct {
		name string
		req  any
		resp any
		call func(resp any) error
	}{
		{"AppendEntries", sampleAppend(addr), &raft.AppendEntriesResponse{RPCHeader: hdr("b"), Term: 10, LastLog: 103, Success: true, NoRetryBackoff: true},
			func(resp any) error {
				return a.AppendEntries("b", b.LocalAddr(), sampleAppend(addr), resp.(*raft.AppendEntriesResponse))
			}},
		{"RequestVote", &raft.RequestVoteRequest{RPCHeader: hdr(addr), Term: 7, Candidate: []byte(addr), LastLogIndex: 50, LastLogTerm: 6, LeadershipTransfer: true},
			&raft.RequestVoteResponse{RPCHeader: hdr("b"), Term: 7, Peers: []byte("peers"), Granted: true},
			func(resp any) error {
				req := &raft.RequestVoteRequest{RPCHeader: hdr(addr), Term: 7, Candidate: []byte(addr), LastLogIndex: 50, LastLogTerm: 6, LeadershipTransfer: true}
				return a.RequestVote("b", b.LocalAddr(), req, resp.(*raft.RequestVoteResponse))
			}},
		{"RequestPreVote", &raft.RequestPreVoteRequest{RPCHeader: hdr(addr), Term: 8, LastLogIndex: 51, LastLogTerm: 7},
			&raft.RequestPreVoteResponse{RPCHeader: hdr("b"), Term: 8, Granted: true},
			func(resp any) error {
				req := &raft.RequestPreVoteRequest{RPCHeader: hdr(addr), Term: 8, LastLogIndex: 51, LastLogTerm: 7}
				return a.RequestPreVote("b", b.LocalAddr(), req, resp.(*raft.RequestPreVoteResponse))
			}},
		{"TimeoutNow", &raft.TimeoutNowRequest{RPCHeader: hdr(addr)}, &raft.TimeoutNowResponse{RPCHeader: hdr("b")},
			func(resp any) error {
				return a.TimeoutNow("b", b.LocalAddr(), &raft.TimeoutNowRequest{RPCHeader: hdr(addr)}, resp.(*raft.TimeoutNowResponse))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stop := make(chan struct{})
			var got any
			wg := serve(b, stop, func(rpc raft.RPC) (any, error) {
				got = rpc.Command
				return c.resp, nil
			})
			resp := reflect.New(reflect.TypeOf(c.resp).Elem()).Interface()
			err := c.call(resp)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.req) {
				t.Fatalf("request\n got %#v\nwant %#v", got, c.req)
			}
			if !reflect.DeepEqual(resp, c.resp) {
				t.Fatalf("response\n got %#v\nwant %#v", resp, c.resp)
			}
		})
	}
}

func TestErrorResponse(t *testing.T) {
	a := newTransport(t, Config{})
	b := newTransport(t, Config{})
	stop := make(chan struct{})
	wg := serve(b, stop, func(raft.RPC) (any, error) { return nil, errors.New("no thanks") })
	defer func() { close(stop); wg.Wait() }()
	var resp raft.RequestVoteResponse
	err := a.RequestVote("b", b.LocalAddr(), &raft.RequestVoteRequest{Term: 1}, &resp)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("no thanks")) {
		t.Fatalf("err = %v, want the server's error", err)
	}
}

func TestHeartbeatFastPath(t *testing.T) {
	a := newTransport(t, Config{})
	b := newTransport(t, Config{})
	addr := string(a.LocalAddr())
	hb := &raft.AppendEntriesRequest{RPCHeader: hdr(addr), Term: 3, Leader: []byte(addr)}
	got := make(chan *raft.AppendEntriesRequest, 1)
	b.SetHeartbeatHandler(func(rpc raft.RPC) {
		got <- rpc.Command.(*raft.AppendEntriesRequest)
		rpc.Respond(&raft.AppendEntriesResponse{Term: 3, Success: true}, nil)
	})
	// Nobody drains Consumer(): a heartbeat must not need it.
	var resp raft.AppendEntriesResponse
	if err := a.AppendEntries("b", b.LocalAddr(), hb, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.Term != 3 {
		t.Fatalf("resp %+v", resp)
	}
	if g := <-got; !reflect.DeepEqual(g, hb) {
		t.Fatalf("heartbeat handler got %#v, want %#v", g, hb)
	}
	if len(b.Consumer()) != 0 {
		t.Fatal("heartbeat reached Consumer()")
	}
	// A heartbeat still gets through while the main loop is stuck on a
	// slow RPC (a follower's disk).
	release := make(chan struct{})
	stop := make(chan struct{})
	wg := serve(b, stop, func(raft.RPC) (any, error) {
		<-release
		return &raft.AppendEntriesResponse{Success: true}, nil
	})
	slowDone := make(chan error, 1)
	go func() {
		var r raft.AppendEntriesResponse
		slowDone <- a.AppendEntries("b", b.LocalAddr(), sampleAppend(addr), &r)
	}()
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	if err := a.AppendEntries("b", b.LocalAddr(), hb, &resp); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("heartbeat took %v behind a slow AppendEntries", d)
	}
	<-got
	close(release)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
}

func TestPipelineOrder(t *testing.T) {
	a := newTransport(t, Config{MaxInFlight: 4})
	b := newTransport(t, Config{})
	seen := recordAppends(t, b)
	pl, err := a.AppendEntriesPipeline("b", b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	pipelineInOrder(t, pl, 50, 10*time.Second)
	if got := seen(); !inOrder(got) {
		t.Fatalf("server saw %v", got)
	}
}

func TestPipelineDisabled(t *testing.T) {
	a := newTransport(t, Config{MaxInFlight: 1})
	if _, err := a.AppendEntriesPipeline("b", "mem://nowhere"); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("err = %v", err)
	}
}

func snapReq(addr string, size int64) *raft.InstallSnapshotRequest {
	return &raft.InstallSnapshotRequest{
		RPCHeader: hdr(addr), SnapshotVersion: raft.SnapshotVersionMax, Term: 9, Leader: []byte(addr),
		LastLogIndex: 1000, LastLogTerm: 8, Peers: []byte("p"), Configuration: []byte("config"),
		ConfigurationIndex: 900, Size: size,
	}
}

func TestInstallSnapshotStream(t *testing.T) {
	for _, size := range []int64{0, 1, 5<<20 + 12345} {
		a := newTransport(t, Config{SnapshotChunkSize: 1 << 20})
		b := newTransport(t, Config{})
		data := make([]byte, size)
		rand.Read(data)
		stop := make(chan struct{})
		var got *raft.InstallSnapshotRequest
		var gotData []byte
		wg := serve(b, stop, func(rpc raft.RPC) (any, error) {
			got = rpc.Command.(*raft.InstallSnapshotRequest)
			var err error
			gotData, err = io.ReadAll(rpc.Reader)
			if err != nil {
				return nil, err
			}
			return &raft.InstallSnapshotResponse{RPCHeader: hdr("b"), Term: 9, Success: true}, nil
		})
		var resp raft.InstallSnapshotResponse
		req := snapReq(string(a.LocalAddr()), size)
		err := a.InstallSnapshot("b", b.LocalAddr(), req, &resp, bytes.NewReader(data))
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("request\n got %#v\nwant %#v", got, req)
		}
		if !bytes.Equal(gotData, data) {
			t.Fatalf("size %d: data differs (got %d bytes)", size, len(gotData))
		}
		want := raft.InstallSnapshotResponse{RPCHeader: hdr("b"), Term: 9, Success: true}
		if !reflect.DeepEqual(resp, want) {
			t.Fatalf("response %#v", resp)
		}
	}
}

// raft answers a stale snapshot without reading it: the client must get the
// answer and stop sending.
func TestInstallSnapshotEarlyAnswer(t *testing.T) {
	a := newTransport(t, Config{SnapshotChunkSize: 64 << 10})
	b := newTransport(t, Config{})
	stop := make(chan struct{})
	wg := serve(b, stop, func(rpc raft.RPC) (any, error) {
		return &raft.InstallSnapshotResponse{Term: 20, Success: false}, nil
	})
	defer func() { close(stop); wg.Wait() }()
	var resp raft.InstallSnapshotResponse
	data := make([]byte, 1<<20)
	if err := a.InstallSnapshot("b", b.LocalAddr(), snapReq("a", int64(len(data))), &resp, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if resp.Term != 20 || resp.Success {
		t.Fatalf("resp %+v", resp)
	}
}

func TestSilentPeerTimeout(t *testing.T) {
	name := memAddr()
	pc, err := memnet.Default().Listen(strings.TrimPrefix(name, "mem://")) // never answers
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	a := newTransport(t, Config{Timeout: 200 * time.Millisecond, HeartbeatTimeout: 100 * time.Millisecond})
	target := raft.ServerAddress(name)
	check := func(name string, limit time.Duration, f func() error) {
		start := time.Now()
		err := f()
		if err == nil {
			t.Fatalf("%s: no error from a silent peer", name)
		}
		if d := time.Since(start); d > limit {
			t.Fatalf("%s: took %v (limit %v): %v", name, d, limit, err)
		}
	}
	check("AppendEntries", time.Second, func() error {
		return a.AppendEntries("x", target, sampleAppend("a"), new(raft.AppendEntriesResponse))
	})
	check("Heartbeat", 500*time.Millisecond, func() error {
		return a.AppendEntries("x", target, &raft.AppendEntriesRequest{Term: 1, Leader: []byte("a")}, new(raft.AppendEntriesResponse))
	})
	check("RequestVote", time.Second, func() error {
		return a.RequestVote("x", target, &raft.RequestVoteRequest{Term: 1}, new(raft.RequestVoteResponse))
	})
	check("InstallSnapshot", 2*time.Second, func() error {
		return a.InstallSnapshot("x", target, snapReq("a", 10), new(raft.InstallSnapshotResponse), bytes.NewReader(make([]byte, 10)))
	})
}

func TestDropHook(t *testing.T) {
	b := newTransport(t, Config{})
	a := newTransport(t, Config{Drop: func(to raft.ServerAddress) bool { return to == b.LocalAddr() }})
	err := a.RequestVote("b", b.LocalAddr(), &raft.RequestVoteRequest{Term: 1}, new(raft.RequestVoteResponse))
	if !errors.Is(err, ErrDropped) {
		t.Fatalf("err = %v", err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	a, err := New(memAddr(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(memAddr(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.SetHeartbeatHandler(func(rpc raft.RPC) { rpc.Respond(&raft.AppendEntriesResponse{}, nil) })
	stop := make(chan struct{})
	wg := serve(b, stop, func(rpc raft.RPC) (any, error) {
		if rpc.Reader != nil {
			io.Copy(io.Discard, rpc.Reader)
			return &raft.InstallSnapshotResponse{}, nil
		}
		return &raft.AppendEntriesResponse{}, nil
	})
	// Use every path: sync, heartbeat, pipeline, snapshot.
	if err := a.AppendEntries("b", b.LocalAddr(), sampleAppend("a"), new(raft.AppendEntriesResponse)); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEntries("b", b.LocalAddr(), &raft.AppendEntriesRequest{Term: 1, Leader: []byte("a")}, new(raft.AppendEntriesResponse)); err != nil {
		t.Fatal(err)
	}
	pl, err := a.AppendEntriesPipeline("b", b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	f, err := pl.AppendEntries(sampleAppend("a"), new(raft.AppendEntriesResponse))
	if err != nil {
		t.Fatal(err)
	}
	if err := (<-pl.Consumer()).Error(); err != nil || f == nil {
		t.Fatal(err)
	}
	if err := a.InstallSnapshot("b", b.LocalAddr(), snapReq("a", 100), new(raft.InstallSnapshotResponse), bytes.NewReader(make([]byte, 100))); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	// A pipeline left open is stopped by Close too.
	a.Close()
	b.Close()
	a.Close() // idempotent
	leaktest.Wait(t, before)
	if err := a.RequestVote("b", b.LocalAddr(), &raft.RequestVoteRequest{}, new(raft.RequestVoteResponse)); !errors.Is(err, ErrTransportShutdown) {
		t.Fatalf("after Close: %v", err)
	}
}

// pipelineInOrder sends n AppendEntries through pl, numbered by
// PrevLogEntry, and checks that the futures come out of Consumer() in send
// order, each with its own answer (the server echoes PrevLogEntry as
// LastLog), within timeout.
func pipelineInOrder(t *testing.T, pl raft.AppendPipeline, n uint64, timeout time.Duration) {
	t.Helper()
	consumed := make(chan error, 1)
	go func() {
		for i := range n {
			f := <-pl.Consumer()
			if err := f.Error(); err != nil {
				consumed <- err
				return
			}
			if f.Request().PrevLogEntry != i || f.Response().LastLog != i {
				consumed <- errors.New("future out of order or with another's answer")
				return
			}
		}
		consumed <- nil
	}()
	for i := range n {
		req := sampleAppend("a")
		req.PrevLogEntry = i
		if _, err := pl.AppendEntries(req, new(raft.AppendEntriesResponse)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-consumed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(timeout):
		t.Fatal("futures not consumed")
	}
}

// recordAppends serves b with a raft that answers every AppendEntries at
// once and records the PrevLogEntry of each in the order raft took them;
// seen returns them so far. Serving stops at the test's end.
func recordAppends(t *testing.T, b *Transport) (seen func() []uint64) {
	stop := make(chan struct{})
	var mu sync.Mutex
	var got []uint64
	wg := serve(b, stop, func(rpc raft.RPC) (any, error) {
		req := rpc.Command.(*raft.AppendEntriesRequest)
		mu.Lock()
		got = append(got, req.PrevLogEntry)
		mu.Unlock()
		return &raft.AppendEntriesResponse{LastLog: req.PrevLogEntry, Success: true}, nil
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
	return func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// inOrder reports whether seen is 0, 1, 2, ...
func inOrder(seen []uint64) bool {
	for i, v := range seen {
		if v != uint64(i) {
			return false
		}
	}
	return true
}
