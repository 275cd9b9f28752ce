package slo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/kv"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/openloop"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

func (s *sloServer) startErpc(st sloStart) (string, error) {
	srv := erpc.NewServer()
	opts, err := sloServerOptions(st.policy, st.workers, st.slo, st.svc, st.sloQueue)
	if err != nil {
		return "", err
	}
	if st.window > 0 {
		opts = append(opts, erpc.WithWindow(st.window))
	}
	opts = append(opts, systems.SpinOptions(st.spin)...)
	switch st.workload {
	case "sleep":
		if st.policy == "inline" {
			return "", errors.New("the sleep workload needs workers: policy jbsq or hash")
		}
		err = srv.HandleRaw(sloMethodWork, func(r erpc.Request) {
			d := r.Data()
			if len(d) < 8 {
				r.RespondError(erpc.Errorf(erpc.InvalidArgument, "short request"))
				return
			}
			served := s.serve(time.Duration(binary.LittleEndian.Uint64(d)))
			out := r.ResponseBuffer(8)
			binary.LittleEndian.PutUint64(out, uint64(served))
			r.Respond(out)
		}, erpc.Background())
	case "kv":
		var hopts []erpc.HandlerOption
		if st.policy != "inline" {
			hopts = append(hopts, erpc.Background())
		}
		err = kv.Register(srv, s.store, hopts...)
	default:
		err = fmt.Errorf("unknown workload %q", st.workload)
	}
	if err != nil {
		return "", err
	}
	ep, err := srv.Listen("127.0.0.1:0", opts...)
	if err != nil {
		return "", err
	}
	s.ep = ep
	return ep.Addr().String(), nil
}

// serve emulates a service time of d on an erpc worker: it waits, and
// returns how long it waited.
func (s *sloServer) serve(d time.Duration) time.Duration {
	t0 := time.Now()
	s.sleepers.SleepFor(d)
	return time.Since(t0)
}

func (s *sloServer) startGRPC(st sloStart) (string, error) {
	lis, err := systems.ListenTCP()
	if err != nil {
		return "", err
	}
	s.tokens = make(chan *openloop.Sleeper, st.workers)
	for range st.workers {
		sl, err := openloop.NewSleeper()
		if err != nil {
			lis.Close()
			return "", err
		}
		s.tokens <- sl
	}
	work := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(systems.RawMsg)
		if err := dec(in); err != nil {
			return nil, err
		}
		if len(in.B) < 8 {
			return nil, status.Error(codes.InvalidArgument, "short request")
		}
		d := time.Duration(binary.LittleEndian.Uint64(in.B))
		tok := <-s.tokens // one of -workers workers; FIFO
		t0 := time.Now()
		tok.Until(t0.Add(d))
		served := time.Since(t0)
		s.tokens <- tok
		out := make([]byte, 8)
		binary.LittleEndian.PutUint64(out, uint64(served))
		return &systems.RawMsg{B: out}, nil
	}
	get := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(systems.RawMsg)
		if err := dec(in); err != nil {
			return nil, err
		}
		v, err := s.store.Get(in.B, make([]byte, 0, kv.MaxValue))
		if err != nil {
			return nil, grpcKVError(err)
		}
		return &systems.RawMsg{B: v}, nil
	}
	set := func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(systems.RawMsg)
		if err := dec(in); err != nil {
			return nil, err
		}
		if len(in.B) < kv.KeySize {
			return nil, grpcKVError(kv.ErrKeySize)
		}
		if err := s.store.Set(in.B[:kv.KeySize], in.B[kv.KeySize:]); err != nil {
			return nil, grpcKVError(err)
		}
		return &systems.RawMsg{}, nil
	}
	desc := grpc.ServiceDesc{
		ServiceName: "erpcbench.SLO",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Work", Handler: work}, {MethodName: "Get", Handler: get}, {MethodName: "Set", Handler: set}},
	}
	gs := grpc.NewServer()
	gs.RegisterService(&desc, struct{}{})
	go gs.Serve(lis)
	s.gs = gs
	return lis.Addr().String(), nil
}

func grpcKVError(err error) error {
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, kv.ErrFull):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return status.Error(codes.InvalidArgument, err.Error())
}

// The kv workload's keys and values, the same on both sides.

// sloKey writes key i (16 bytes) into dst.
func sloKey(dst []byte, i int) []byte {
	dst = append(dst[:0], make([]byte, kv.KeySize)...)
	binary.BigEndian.PutUint64(dst, uint64(i))
	binary.BigEndian.PutUint64(dst[8:], uint64(i)*0x9e3779b97f4a7c15)
	return dst
}

// sloPreloadLen is key i's value length before any SET: 64 to 512 bytes.
func sloPreloadLen(i int) int {
	return kv.MinValue + (i*37)%(kv.MaxValue-kv.MinValue+1)
}

// sloValue is a value of n bytes for key i.
func sloValue(i, n int) []byte {
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i + j)
	}
	return v
}
