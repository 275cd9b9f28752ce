//go:build linux

package testbed

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/transport"
	"github.com/erpc-go/erpc/transport/udp"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// The testbed scenarios' server, "netsink": one process in the server's
// namespace serving erpc over UDP and gRPC over TCP on the same address
// (-listen; the server's address on the testbed), with the Echo and Sink
// methods of the other servers. It counts the bytes each sender's address
// delivers, in 1 ms bins of wall-clock time: erpc's datagrams as its
// transport receives them (header included), gRPC's bytes as its
// connections read them. That is per-sender throughput as the receiver
// sees it, after the bottleneck, for the fairness index and the plot.
//
// Control commands: "reset" starts the bins again (the reply is the epoch,
// Unix nanoseconds); "bins" returns them as JSON (netBins).

// netBinWidth is the resolution of the receiver's per-sender counts.
const netBinWidth = time.Millisecond

// netBinMax bounds the bins kept per sender (two minutes).
const netBinMax = 120_000

// rxBins counts bytes per source address in netBinWidth bins since epoch.
type rxBins struct {
	mu    sync.Mutex
	epoch time.Time
	by    map[netip.Addr][]uint64
}

func newRxBins() *rxBins { return &rxBins{epoch: time.Now(), by: map[netip.Addr][]uint64{}} }

// bin is the index of time t; call with mu held.
func (c *rxBins) bin(t time.Time) int {
	return int(t.Sub(c.epoch) / netBinWidth)
}

// Add counts n bytes from a in bin i; call with mu held.
func (c *rxBins) Add(a netip.Addr, i, n int) {
	if i < 0 || i >= netBinMax {
		return
	}
	b := c.by[a]
	if i >= len(b) {
		if i < cap(b) {
			b = b[:i+1]
		} else {
			nb := make([]uint64, i+1, max(2*cap(b), i+1, 1024))
			copy(nb, b)
			b = nb
		}
		c.by[a] = b
	}
	b[i] += uint64(n)
}

func (c *rxBins) Reset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch = time.Now()
	clear(c.by)
	return c.epoch.UnixNano()
}

// Bins is the "bins" reply: bytes per sender address per bin.
type Bins struct {
	EpochNS int64               `json:"epoch_ns"`
	BinNS   int64               `json:"bin_ns"`
	By      map[string][]uint64 `json:"by"`
}

func (c *rxBins) snapshot() Bins {
	c.mu.Lock()
	defer c.mu.Unlock()
	nb := Bins{EpochNS: c.epoch.UnixNano(), BinNS: int64(netBinWidth), By: map[string][]uint64{}}
	for a, b := range c.by {
		nb.By[a.String()] = append([]uint64(nil), b...)
	}
	return nb
}

// countingTransport counts what a transport receives, per source address,
// and forwards the optional interfaces the endpoint looks for.
type countingTransport struct {
	transport.Transport
	c     *rxBins
	bin   int
	inner func(netip.AddrPort, []byte)
	count func(netip.AddrPort, []byte) // t.countOne, bound once
}

func newCountingTransport(t transport.Transport, c *rxBins) *countingTransport {
	ct := &countingTransport{Transport: t, c: c}
	ct.count = ct.countOne
	return ct
}

func (t *countingTransport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.bin, t.inner = t.c.bin(time.Now()), fn
	n, err := t.Transport.Receive(t.count)
	t.inner = nil
	return n, err
}

func (t *countingTransport) countOne(from netip.AddrPort, data []byte) {
	t.c.Add(from.Addr().Unmap(), t.bin, len(data))
	t.inner(from, data)
}

func (t *countingTransport) Target() string {
	if x, ok := t.Transport.(transport.Targeter); ok {
		return x.Target()
	}
	return ""
}

func (t *countingTransport) PacketSize() int {
	if x, ok := t.Transport.(transport.PacketSizer); ok {
		return x.PacketSize()
	}
	return 1472
}

func (t *countingTransport) Resolve(addr string) (netip.AddrPort, error) {
	if r, ok := t.Transport.(interface {
		Resolve(string) (netip.AddrPort, error)
	}); ok {
		return r.Resolve(addr)
	}
	return netip.ParseAddrPort(addr)
}

// countingListener counts the bytes its connections read, per remote
// address.
type countingListener struct {
	net.Listener
	c *rxBins
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ap, _ := netip.ParseAddrPort(conn.RemoteAddr().String())
	return &countingConn{Conn: conn, c: l.c, from: ap.Addr().Unmap()}, nil
}

type countingConn struct {
	net.Conn
	c    *rxBins
	from netip.Addr
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.c.mu.Lock()
		c.c.Add(c.from, c.c.bin(time.Now()), n)
		c.c.mu.Unlock()
	}
	return n, err
}

type netSink struct {
	bins *rxBins
	ep   *erpc.Endpoint
	gs   *grpc.Server
	lis  net.Listener
}

// newNetSink serves on cfg.listen (an IP address; ports are picked).
func newNetSink(cfg proc.Config) (proc.Impl, error) {
	ip := cfg.Listen
	if ip == "" {
		ip = "0.0.0.0"
	}
	s := &netSink{bins: newRxBins()}
	u, err := udp.Listen(net.JoinHostPort(ip, "0"), udp.Options{})
	if err != nil {
		return nil, err
	}
	srv, err := systems.BenchServer()
	if err != nil {
		u.Close()
		return nil, err
	}
	opts := append(systems.ErpcOptions(cfg.Busy, cfg.Window), erpc.WithTransport(newCountingTransport(u, s.bins)))
	if s.ep, err = srv.Listen("", opts...); err != nil {
		u.Close()
		return nil, err
	}
	lis, err := net.Listen("tcp4", net.JoinHostPort(ip, "0"))
	if err != nil {
		s.ep.Close()
		return nil, err
	}
	s.lis = countingListener{Listener: lis, c: s.bins}
	s.gs = grpc.NewServer(grpc.MaxRecvMsgSize(systems.GRPCMaxMsg), grpc.MaxSendMsgSize(systems.GRPCMaxMsg))
	s.gs.RegisterService(&systems.GRPCDesc, struct{}{})
	go s.gs.Serve(s.lis)
	return s, nil
}

// Addr is "<udp port> <tcp port>".
func (s *netSink) Addr() string {
	return fmt.Sprintf("%d %d", s.ep.Addr().Port(), s.lis.Addr().(*net.TCPAddr).Port)
}

func (s *netSink) Close() {
	s.gs.Stop()
	s.ep.Close()
}

func (s *netSink) Control(args []string) (string, error) {
	switch args[0] {
	case "reset":
		return strconv.FormatInt(s.bins.Reset(), 10), nil
	case "bins":
		b, err := json.Marshal(s.bins.snapshot())
		return string(b), err
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

// Sink is the client's side of a netsink server.
type Sink struct {
	*proc.Server
	ip               netip.Addr
	UDPPort, TCPPort int
}

// StartSink starts a netsink in namespace ns, listening on ip, pinned
// to cpu (-1: not pinned).
func StartSink(ns string, ip netip.Addr, cpu, window int) (*Sink, error) {
	srv, err := proc.Start(proc.Config{System: "netsink", Transport: "udp", Listen: ip.String(), Netns: ns, CPU: cpu, Window: window})
	if err != nil {
		return nil, err
	}
	h := &Sink{Server: srv, ip: ip}
	f := strings.Fields(srv.Addr)
	if len(f) != 2 {
		srv.Stop()
		return nil, fmt.Errorf("netsink: address %q", srv.Addr)
	}
	h.UDPPort, _ = strconv.Atoi(f[0])
	h.TCPPort, _ = strconv.Atoi(f[1])
	return h, nil
}

// UDPAddr is the sink's erpc address.
func (h *Sink) UDPAddr() string {
	return net.JoinHostPort(h.ip.String(), strconv.Itoa(h.UDPPort))
}

// TCPAddr is the sink's gRPC address.
func (h *Sink) TCPAddr() string {
	return net.JoinHostPort(h.ip.String(), strconv.Itoa(h.TCPPort))
}

// Reset starts the sink's bins again.
func (h *Sink) Reset() error {
	_, err := h.Ctl("reset")
	return err
}

func (h *Sink) Bins() (Bins, error) {
	var nb Bins
	r, err := h.Ctl("bins")
	if err != nil {
		return nb, err
	}
	err = json.Unmarshal([]byte(r), &nb)
	return nb, err
}

func init() { proc.Register("netsink", newNetSink) }
