package systems

import (
	"context"
	"fmt"
	"net"

	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmanager"
	"storj.io/drpc/drpcmux"
	"storj.io/drpc/drpcserver"
	"storj.io/drpc/drpcwire"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// drpc (storj.io/drpc) over TCP. Its code generator is not used: the
// service description and the raw-bytes encoding below are what it would
// generate, minus protobuf. A drpc connection carries one call at a time,
// so each client goroutine has its own connection.

type drpcRawEncoding struct{}

func (drpcRawEncoding) Marshal(msg drpc.Message) ([]byte, error) { return msg.(*RawMsg).B, nil }

func (drpcRawEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	m := msg.(*RawMsg)
	m.B = append(m.B[:0], buf...)
	return nil
}

// drpcBench is the service.
type drpcBench struct{}

func (drpcBench) Echo(_ context.Context, in *RawMsg) (*RawMsg, error) { return in, nil }
func (drpcBench) Sink(_ context.Context, _ *RawMsg) (*RawMsg, error)  { return &RawMsg{B: sink32}, nil }

// drpcDesc describes drpcBench to drpcmux.
type drpcDesc struct{}

func (drpcDesc) NumMethods() int { return 2 }

func (drpcDesc) Method(n int) (string, drpc.Encoding, drpc.Receiver, any, bool) {
	switch n {
	case 0:
		return "/erpcbench.Bench/Echo", drpcRawEncoding{},
			func(srv any, ctx context.Context, in1, _ any) (drpc.Message, error) {
				return srv.(drpcBench).Echo(ctx, in1.(*RawMsg))
			}, drpcBench.Echo, true
	case 1:
		return "/erpcbench.Bench/Sink", drpcRawEncoding{},
			func(srv any, ctx context.Context, in1, _ any) (drpc.Message, error) {
				return srv.(drpcBench).Sink(ctx, in1.(*RawMsg))
			}, drpcBench.Sink, true
	}
	return "", nil, nil, nil, false
}

// drpcManager raises the reader's 4 MiB message limit to 1 GiB.
var drpcManager = drpcmanager.Options{Reader: drpcwire.ReaderOptions{MaximumBufferSize: drpcMaxMsg}}

const drpcMaxMsg = 1 << 30

type drpcServer struct {
	lis    net.Listener
	cancel context.CancelFunc
	done   chan struct{}
}

func newDRPCServer(proc.Config) (proc.Impl, error) {
	mux := drpcmux.New()
	if err := mux.Register(drpcBench{}, drpcDesc{}); err != nil {
		return nil, err
	}
	lis, err := ListenTCP()
	if err != nil {
		return nil, err
	}
	srv := drpcserver.NewWithOptions(mux, drpcserver.Options{Manager: drpcManager})
	ctx, cancel := context.WithCancel(context.Background())
	s := &drpcServer{lis: lis, cancel: cancel, done: make(chan struct{})}
	go func() { srv.Serve(ctx, lis); close(s.done) }()
	return s, nil
}

func (s *drpcServer) Addr() string { return s.lis.Addr().String() }
func (s *drpcServer) Close()       { s.cancel(); <-s.done }
func (s *drpcServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

type drpcClient struct {
	addr  string
	conns []*drpcconn.Conn
}

func newDRPCClient(addr string) (meter.Client, error) {
	c := &drpcClient{addr: addr}
	return c, c.ensure(1)
}

func (c *drpcClient) ensure(n int) error {
	for len(c.conns) < n {
		nc, err := net.Dial("tcp4", c.addr)
		if err != nil {
			return err
		}
		c.conns = append(c.conns, drpcconn.NewWithOptions(nc, drpcconn.Options{Manager: drpcManager}))
	}
	return nil
}

func (c *drpcClient) Close() {
	for _, cc := range c.conns {
		cc.Close()
	}
}

func (c *drpcClient) Run(p meter.Point, m *meter.Meter) error {
	if max(p.Size, p.Resp) > drpcMaxMsg {
		return fmt.Errorf("drpc: a %d-byte message exceeds the 1 GiB limit set here", max(p.Size, p.Resp))
	}
	if err := c.ensure(p.Conc); err != nil {
		return err
	}
	method := "/erpcbench.Bench/Echo"
	if p.Resp != p.Size {
		method = "/erpcbench.Bench/Sink"
	}
	ctx := context.Background()
	enc := drpcRawEncoding{}
	return runGoroutines(p, m, func(g int, req []byte, resp *RawMsg) error {
		return c.conns[g].Invoke(ctx, method, enc, &RawMsg{B: req}, resp)
	})
}
