//go:build linux

package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/erpc-go/erpc"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// The fleet scenario's server, "fleetsrv": one replica of the fleet, in
// its own namespace and process (so that kill -9 is real), serving erpc
// over UDP and gRPC over TCP on the same fixed address (-listen ip:port:
// every replica has the same port, as behind a DNS name). Its one method,
// Echo, waits the replica's service time (a handler delay, set by the
// "delay" command; the slow scenario's replica has ten times the others')
// and answers with the replica's IPv4 address (4 bytes), so that the
// client knows which replica served each call.
//
// Commands: "delay <ns>" sets the service time; "drain" starts a graceful
// stop (erpc's Endpoint.Shutdown, gRPC's GracefulStop) and returns at
// once; "connects" returns the sessions (erpc) and connections (gRPC) its
// clients opened, in FleetBinWidth bins (ConnectBins, JSON).

// FleetBinWidth is the resolution of a replica's connect counts.
const FleetBinWidth = 10 * time.Millisecond

// ConnectBins counts the sessions clients opened to one replica process,
// by FleetBinWidth bin since EpochNS (Unix nanoseconds).
type ConnectBins struct {
	EpochNS int64   `json:"epoch_ns"`
	N       []int64 `json:"n"`
}

type connectCounter struct {
	mu    sync.Mutex
	epoch time.Time
	n     []int64
}

func (c *connectCounter) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := int(time.Since(c.epoch) / FleetBinWidth)
	if i >= netBinMax {
		return
	}
	for len(c.n) <= i {
		c.n = append(c.n, 0)
	}
	c.n[i]++
}

func (c *connectCounter) snapshot() ConnectBins {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ConnectBins{EpochNS: c.epoch.UnixNano(), N: append([]int64(nil), c.n...)}
}

// sessionCounter is the server endpoint's StatsHandler: it counts the
// sessions clients open.
type sessionCounter struct{ c *connectCounter }

func (h sessionCounter) CallBegin(ctx context.Context, _ erpc.CallInfo) context.Context { return ctx }
func (h sessionCounter) CallEnd(context.Context, erpc.CallInfo, erpc.CallEnd)           {}
func (h sessionCounter) SessionEvent(ev erpc.SessionEvent) {
	if ev.Up && ev.Server {
		h.c.add()
	}
}

// connCountingListener counts gRPC's accepted connections.
type connCountingListener struct {
	net.Listener
	c *connectCounter
}

func (l connCountingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.c.add()
	}
	return conn, err
}

type fleetServer struct {
	id       [4]byte
	delay    atomic.Int64 // service time, ns
	connects *connectCounter
	ep       *erpc.Endpoint
	gs       *grpc.Server
	lis      net.Listener
}

func newFleetServer(cfg proc.Config) (proc.Impl, error) {
	ap, err := netip.ParseAddrPort(cfg.Listen)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("fleetsrv: -listen %q: want ipv4:port", cfg.Listen)
	}
	s := &fleetServer{id: ap.Addr().As4(), connects: &connectCounter{epoch: time.Now()}}
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", s.echo, erpc.Background()); err != nil {
		return nil, err
	}
	opts := append(systems.ErpcOptions(cfg.Busy, cfg.Window), erpc.WithStatsHandler(sessionCounter{s.connects}), erpc.Insecure())
	if s.ep, err = srv.Listen(cfg.Listen, opts...); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp4", cfg.Listen)
	if err != nil {
		s.ep.Close()
		return nil, err
	}
	s.lis = connCountingListener{Listener: lis, c: s.connects}
	s.gs = grpc.NewServer()
	s.gs.RegisterService(&fleetGRPCDesc, s)
	go s.gs.Serve(s.lis)
	return s, nil
}

func (s *fleetServer) serve() []byte {
	if d := time.Duration(s.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	return s.id[:]
}

func (s *fleetServer) echo(context.Context, []byte) ([]byte, error) { return s.serve(), nil }

var fleetGRPCDesc = grpc.ServiceDesc{
	ServiceName: "erpcbench.Bench",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Echo", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(systems.RawMsg)
		if err := dec(in); err != nil {
			return nil, err
		}
		return &systems.RawMsg{B: srv.(*fleetServer).serve()}, nil
	}}},
}

func (s *fleetServer) Addr() string { return s.ep.Addr().String() }

func (s *fleetServer) Close() {
	s.gs.Stop()
	s.ep.Close()
}

func (s *fleetServer) Control(args []string) (string, error) {
	switch args[0] {
	case "delay":
		if len(args) != 2 {
			return "", fmt.Errorf("delay <ns>")
		}
		d, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return "", err
		}
		s.delay.Store(d)
		return "", nil
	case "drain":
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s.ep.Shutdown(ctx)
		}()
		go s.gs.GracefulStop()
		return "", nil
	case "connects":
		b, err := json.Marshal(s.connects.snapshot())
		return string(b), err
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

// FleetServer is the driver's handle on one replica.
type FleetServer struct {
	*proc.Server
	Addr netip.AddrPort
}

// StartFleetServer starts a replica in namespace ns on addr with the given
// service time.
func StartFleetServer(ns string, addr netip.AddrPort, service time.Duration) (*FleetServer, error) {
	srv, err := proc.Start(proc.Config{System: "fleetsrv", Transport: "udp", Listen: addr.String(), Netns: ns, CPU: -1})
	if err != nil {
		return nil, err
	}
	s := &FleetServer{Server: srv, Addr: addr}
	if err := s.SetDelay(service); err != nil {
		srv.Stop()
		return nil, err
	}
	return s, nil
}

// SetDelay sets the replica's service time.
func (s *FleetServer) SetDelay(d time.Duration) error {
	_, err := s.Ctl("delay " + strconv.FormatInt(int64(d), 10))
	return err
}

// Drain starts the replica's graceful stop.
func (s *FleetServer) Drain() error {
	_, err := s.Ctl("drain")
	return err
}

// Connects returns the sessions and connections clients opened to it.
func (s *FleetServer) Connects() (ConnectBins, error) {
	var b ConnectBins
	r, err := s.Ctl("connects")
	if err != nil {
		return b, err
	}
	err = json.Unmarshal([]byte(r), &b)
	return b, err
}

func init() { proc.Register("fleetsrv", newFleetServer) }
