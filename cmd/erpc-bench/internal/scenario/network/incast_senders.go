//go:build linux

package network

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// incastSender is one sender of one system.
type incastSender interface {
	// send sends the sender's bytes and waits for the answers; failed is
	// the number of calls that failed, err the first failure.
	Send(ctx context.Context) (calls, failed int, err error)
	retransmits() uint64
	Close()
}

type incastSystem struct {
	name    string
	tr      string
	senders []incastSender
	acc     incastAcc
}

func (s *incastSystem) Close() {
	for _, x := range s.senders {
		x.Close()
	}
}

func (s *incastSystem) retransmits() uint64 {
	var n uint64
	for _, x := range s.senders {
		n += x.retransmits()
	}
	return n
}

// erpcSender is one erpc client endpoint with one session to the server.
type erpcSender struct {
	ep    *erpc.Endpoint
	sess  *erpc.Session
	req   []byte
	chunk int
	resp  [][]byte
}

func newErpcSender(ns string, addr netip.Addr, target string, nc *netConfig, opts []erpc.Option) (*erpcSender, error) {
	s := &erpcSender{req: meter.Payload(nc.size), chunk: nc.chunk}
	for range nc.size / nc.chunk {
		s.resp = append(s.resp, make([]byte, 0, 32))
	}
	err := testnet.In(ns, func() (err error) {
		s.ep, err = erpc.Listen(net.JoinHostPort(addr.String(), "0"), opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.sess, err = s.ep.Dial(ctx, target); err != nil {
		s.ep.Close()
		return nil, fmt.Errorf("dial %s from %s: %w", target, ns, err)
	}
	return s, nil
}

func (s *erpcSender) call(ctx context.Context, i int) error {
	out, err := s.sess.Call(ctx, "Sink", s.req[i*s.chunk:(i+1)*s.chunk], s.resp[i][:0])
	if err == nil && len(out) != 32 {
		err = meter.ErrShortResponse
	}
	return err
}

func (s *erpcSender) Send(ctx context.Context) (int, int, error) {
	return sendChunks(ctx, len(s.resp), s.call)
}

// sendChunks makes n calls at once and waits for them.
func sendChunks(ctx context.Context, n int, call func(context.Context, int) error) (int, int, error) {
	if n == 1 {
		if err := call(ctx, 0); err != nil {
			return 1, 1, err
		}
		return 1, 0, nil
	}
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- call(ctx, i) }()
	}
	failed := 0
	var first error
	for range n {
		if err := <-errs; err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return n, failed, first
}

func (s *erpcSender) retransmits() uint64 { return s.ep.Stats().Retransmits }

func (s *erpcSender) Close() {
	s.sess.Close()
	s.ep.Close()
}

// grpcSender is one gRPC connection, its TCP socket opened in the
// sender's namespace.
type grpcSender struct {
	ns    string
	conn  *grpc.ClientConn
	req   []byte
	chunk int
}

// dialIn returns a gRPC dialer whose sockets belong to namespace ns.
func dialIn(ns string, local *net.TCPAddr) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		err := testnet.In(ns, func() (err error) {
			d := net.Dialer{LocalAddr: local}
			c, err = d.DialContext(ctx, "tcp4", addr)
			return err
		})
		return c, err
	}
}

func newGRPCSender(ns, target string, local *net.TCPAddr, size, chunk int) (*grpcSender, error) {
	conn, err := grpc.NewClient("passthrough:///"+target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dialIn(ns, local)),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype(systems.GRPCRawCodec{}.Name()),
			grpc.MaxCallRecvMsgSize(systems.GRPCMaxMsg), grpc.MaxCallSendMsgSize(systems.GRPCMaxMsg)))
	if err != nil {
		return nil, err
	}
	s := &grpcSender{ns: ns, conn: conn, req: meter.Payload(size), chunk: chunk}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp systems.RawMsg
	if err := conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: s.req[:32]}, &resp); err != nil {
		conn.Close()
		return nil, fmt.Errorf("grpc to %s from %s: %w", target, ns, err)
	}
	return s, nil
}

func (s *grpcSender) Send(ctx context.Context) (int, int, error) {
	return sendChunks(ctx, len(s.req)/s.chunk, func(ctx context.Context, i int) error {
		var resp systems.RawMsg
		err := s.conn.Invoke(ctx, "/erpcbench.Bench/Sink", &systems.RawMsg{B: s.req[i*s.chunk : (i+1)*s.chunk]}, &resp)
		if err == nil && len(resp.B) != 32 {
			err = meter.ErrShortResponse
		}
		return err
	})
}

func (s *grpcSender) retransmits() uint64 {
	n, _ := tcpRetransSegs(s.ns)
	return n
}

func (s *grpcSender) Close() { s.conn.Close() }

// tcpRetransSegs reads TCP's RetransSegs counter of namespace ns
// (/proc/thread-self/net/snmp shows the namespace of the reading thread).
func tcpRetransSegs(ns string) (uint64, error) {
	var n uint64
	err := testnet.In(ns, func() error {
		f, err := os.Open("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		defer f.Close()
		var head []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 || fields[0] != "Tcp:" {
				continue
			}
			if head == nil {
				head = fields
				continue
			}
			for i, h := range head {
				if h == "RetransSegs" && i < len(fields) {
					n, _ = strconv.ParseUint(fields[i], 10, 64)
				}
			}
			return nil
		}
		return errors.New("no Tcp: lines in /proc/net/snmp")
	})
	return n, err
}
