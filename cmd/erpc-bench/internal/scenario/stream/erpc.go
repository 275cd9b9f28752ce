package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/erpc-go/erpc"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// The erpc side: a server with two stream handlers, Flood (reads one
// message, whose length is the size, then sends messages of that size
// until the stream ends) and Echo (sends back each message it reads).

func init() {
	proc.Register("stream-erpc", newErpcServer)
	proc.Register("stream-grpc", newGRPCServer)
}

type erpcServer struct{ ep *erpc.Endpoint }

func newErpcServer(proc.Config) (proc.Impl, error) {
	srv := erpc.NewServer()
	if err := srv.HandleStream("Flood", erpcFlood); err != nil {
		return nil, err
	}
	if err := srv.HandleStream("Echo", erpcEcho); err != nil {
		return nil, err
	}
	ep, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &erpcServer{ep: ep}, nil
}

func (s *erpcServer) Addr() string { return s.ep.Addr().String() }
func (s *erpcServer) Close()       { s.ep.Close() }
func (s *erpcServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

func erpcFlood(s erpc.ServerStream) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	msg := make([]byte, len(first))
	copy(msg, first)
	for {
		if err := s.Send(msg); err != nil {
			return nil // the client canceled: the end of a point
		}
	}
}

func erpcEcho(s erpc.ServerStream) error {
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		if err := s.Send(m); err != nil {
			return nil
		}
	}
}

// erpcClient opens its streams on one session.
type erpcClient struct {
	ep   *erpc.Endpoint
	sess *erpc.Session
}

func newErpcClient(addr string) (client, error) {
	ep, err := erpc.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := ep.Dial(ctx, addr)
	if err != nil {
		ep.Close()
		return nil, err
	}
	return &erpcClient{ep: ep, sess: sess}, nil
}

func (c *erpcClient) Close() {
	c.sess.Close()
	c.ep.Close()
}

func (c *erpcClient) flood(ctx context.Context, msg []byte) (recvFunc, error) {
	st, err := c.sess.NewStream(ctx, "Flood")
	if err != nil {
		return nil, err
	}
	if err := st.Send(msg); err != nil {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	return func() (int, error) {
		m, err := st.Recv()
		return len(m), err
	}, nil
}

func (c *erpcClient) echo(ctx context.Context, msg []byte) (recvFunc, error) {
	st, err := c.sess.NewStream(ctx, "Echo")
	if err != nil {
		return nil, err
	}
	return func() (int, error) {
		if err := st.Send(msg); err != nil {
			return 0, err
		}
		m, err := st.Recv()
		return len(m), err
	}, nil
}
