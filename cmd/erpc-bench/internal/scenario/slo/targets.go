package slo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/kv"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/openloop"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// erpcSLOTarget is the erpc client: -endpoints endpoints, each with
// -sessions sessions to the server; lane i sends from endpoint i, on a
// session chosen at random for each request (so each session's requests,
// too, form a Poisson stream). Calls are Session.Go: the generator never
// waits for an answer.
type erpcSLOTarget struct {
	eps      []*erpc.Endpoint
	sess     [][]*erpc.Session
	workload string
	size     int
	value    []byte // kv: SET values are prefixes of it
}

func newErpcSLOTarget(addr string, sc *sloConfig) (*erpcSLOTarget, error) {
	t := &erpcSLOTarget{workload: sc.workload, size: sc.size, value: sloValue(7, kv.MaxValue)}
	opts := systems.SpinOptions(sc.cliSpin)
	if sc.window > 0 {
		opts = append(opts, erpc.WithWindow(sc.window))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range sc.endpoints {
		ep, err := erpc.Listen("127.0.0.1:0", opts...)
		if err != nil {
			t.Close()
			return nil, err
		}
		t.eps = append(t.eps, ep)
		var ss []*erpc.Session
		for range sc.sessions {
			s, err := ep.Dial(ctx, addr)
			if err != nil {
				t.Close()
				return nil, fmt.Errorf("dial %s: %w", addr, err)
			}
			ss = append(ss, s)
		}
		t.sess = append(t.sess, ss)
	}
	return t, nil
}

func (t *erpcSLOTarget) Close() {
	for _, ss := range t.sess {
		for _, s := range ss {
			s.Close()
		}
	}
	for _, ep := range t.eps {
		ep.Close()
	}
}

func (t *erpcSLOTarget) Send(_ context.Context, lane int, c *openloop.Call) {
	ss := t.sess[lane]
	s := ss[c.Sess%len(ss)]
	if c.Fn == nil {
		c.Resp = make([]byte, 0, kv.MaxValue)
		c.Fn = func(resp []byte, err error) {
			nack := erpc.CodeOf(err) == erpc.ResourceExhausted
			var served time.Duration
			if err == nil {
				served, err = checkSLOResponse(t.workload, c, resp)
			}
			c.Finish(err, nack, served)
		}
	}
	var method string
	method, c.Req = buildSLORequest(t.workload, t.size, t.value, c)
	s.Go(method, c.Req, c.Resp[:0], c.Fn)
}

// buildSLORequest writes c's request into c.req and returns the erpc
// method and the request.
func buildSLORequest(workload string, size int, value []byte, c *openloop.Call) (string, []byte) {
	if workload == "kv" {
		if c.Get {
			return kv.MethodGet, sloKey(c.Req, c.Key)
		}
		req := sloKey(c.Req, c.Key)
		return kv.MethodSet, append(req, value[:c.Vlen]...)
	}
	req := append(c.Req[:0], make([]byte, max(size, 8))...)
	binary.LittleEndian.PutUint64(req, uint64(c.Svc))
	return sloMethodWork, req
}

var errSLOResponse = errors.New("response of the wrong size")

// checkSLOResponse checks an answer and returns the service time it
// reports (sleep workload).
func checkSLOResponse(workload string, c *openloop.Call, resp []byte) (time.Duration, error) {
	switch {
	case workload != "kv":
		if len(resp) != 8 {
			return 0, errSLOResponse
		}
		return time.Duration(binary.LittleEndian.Uint64(resp)), nil
	case c.Get:
		if len(resp) < kv.MinValue || len(resp) > kv.MaxValue {
			return 0, errSLOResponse
		}
	case len(resp) != 0:
		return 0, errSLOResponse
	}
	return 0, nil
}

// grpcSLOTarget is the gRPC client: -endpoints x -sessions connections
// (ClientConns, one HTTP/2 connection each); each call is a goroutine
// blocked in Invoke, started at its planned time.
type grpcSLOTarget struct {
	conns    [][]*grpc.ClientConn
	workload string
	size     int
	value    []byte
}

func newGRPCSLOTarget(addr string, sc *sloConfig) (*grpcSLOTarget, error) {
	t := &grpcSLOTarget{workload: sc.workload, size: sc.size, value: sloValue(7, kv.MaxValue)}
	for range sc.endpoints {
		var cs []*grpc.ClientConn
		for range sc.sessions {
			conn, err := grpc.NewClient(addr,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.CallContentSubtype(systems.GRPCRawCodec{}.Name())))
			if err != nil {
				t.Close()
				return nil, err
			}
			conn.Connect()
			cs = append(cs, conn)
		}
		t.conns = append(t.conns, cs)
	}
	return t, nil
}

func (t *grpcSLOTarget) Close() {
	for _, cs := range t.conns {
		for _, c := range cs {
			c.Close()
		}
	}
}

func (t *grpcSLOTarget) Send(ctx context.Context, lane int, c *openloop.Call) {
	cs := t.conns[lane]
	conn := cs[c.Sess%len(cs)]
	_, c.Req = buildSLORequest(t.workload, t.size, t.value, c)
	method := grpcSLOWork
	if t.workload == "kv" {
		method = grpcSLOSet
		if c.Get {
			method = grpcSLOGet
		}
	}
	if c.Resp == nil {
		c.Resp = make([]byte, 0, kv.MaxValue)
	}
	go func() {
		out := systems.RawMsg{B: c.Resp[:0]}
		err := conn.Invoke(ctx, method, &systems.RawMsg{B: c.Req}, &out)
		nack := status.Code(err) == codes.ResourceExhausted
		var served time.Duration
		if err == nil {
			served, err = checkSLOResponse(t.workload, c, out.B)
		}
		c.Finish(err, nack, served)
	}()
}

// warmGRPC makes one call on every connection, so that connecting is not
// measured.
func (t *grpcSLOTarget) warm() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	method, req := grpcSLOWork, make([]byte, max(t.size, 8))
	if t.workload == "kv" {
		method, req = grpcSLOGet, sloKey(nil, 0)
	}
	for _, cs := range t.conns {
		for _, c := range cs {
			var out systems.RawMsg
			if err := c.Invoke(ctx, method, &systems.RawMsg{B: req}, &out); err != nil {
				return err
			}
		}
	}
	return nil
}
