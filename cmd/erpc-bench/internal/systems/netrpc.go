package systems

import (
	"fmt"
	"net"
	"net/rpc"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// net/rpc from the standard library, over TCP with its default gob codec
// (a []byte costs gob little more than a length prefix).

// NetRPCBench is the net/rpc service (exported, as net/rpc requires).
type NetRPCBench struct{}

// Echo answers with the request.
func (NetRPCBench) Echo(req []byte, resp *[]byte) error { *resp = req; return nil }

// Sink answers with 32 bytes.
func (NetRPCBench) Sink(req []byte, resp *[]byte) error { *resp = sink32; return nil }

type netRPCServer struct{ lis net.Listener }

func newNetRPCServer(proc.Config) (proc.Impl, error) {
	srv := rpc.NewServer()
	if err := srv.RegisterName("Bench", NetRPCBench{}); err != nil {
		return nil, err
	}
	lis, err := ListenTCP()
	if err != nil {
		return nil, err
	}
	go func() { // srv.Accept would log the listener's closing
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go srv.ServeConn(c)
		}
	}()
	return &netRPCServer{lis: lis}, nil
}

func (s *netRPCServer) Addr() string { return s.lis.Addr().String() }
func (s *netRPCServer) Close()       { s.lis.Close() }
func (s *netRPCServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

type netRPCClient struct{ c *rpc.Client }

func newNetRPCClient(addr string) (meter.Client, error) {
	c, err := rpc.Dial("tcp4", addr)
	if err != nil {
		return nil, err
	}
	return &netRPCClient{c: c}, nil
}

func (c *netRPCClient) Close() { c.c.Close() }

func (c *netRPCClient) Run(p meter.Point, m *meter.Meter) error {
	method := "Bench.Echo"
	if p.Resp != p.Size {
		method = "Bench.Sink"
	}
	return runGoroutines(p, m, func(_ int, req []byte, resp *RawMsg) error {
		resp.B = resp.B[:0]
		return c.c.Call(method, req, &resp.B)
	})
}
