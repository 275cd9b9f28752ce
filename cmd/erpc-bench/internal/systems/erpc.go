package systems

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/faults"
	"github.com/erpc-go/erpc/transport"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// erpc's busy-poll spin: long enough to cover the gaps inside a measured
// point, short enough that an idle server between points gives the core
// back to whichever system is being measured.
const busySpin = 20 * time.Millisecond

var memSeq atomic.Int64

// PacketSizeEnv, when set to a number, is the datagram size (header
// included) erpc's endpoints use in a run, both ends: erpc.WithMaxPacketSize.
const PacketSizeEnv = "ERPC_BENCH_PACKET_SIZE"

// defaultCredits is erpc's default credits per session (WithCredits).
const defaultCredits = 32

// ErpcOptions are the endpoint options both sides share. The plaintext
// system is plaintext on purpose (erpc.Insecure): its testbeds serve and
// dial namespace addresses, which the plaintext policy would otherwise
// refuse; erpc-tls adds WithTLS, which replaces it.
func ErpcOptions(busy bool, window int) []erpc.Option {
	o := []erpc.Option{erpc.Insecure()}
	if busy {
		o = append(o, erpc.WithBusyPoll(busySpin))
	}
	if window > 0 {
		// One credit per concurrent single-packet call, as a raw window
		// of the same size has: with fewer, calls past the credits wait.
		o = append(o, erpc.WithWindow(window), erpc.WithCredits(max(window, defaultCredits)))
	}
	// A measurement knob (docs/benchmarks/tcp.md): the datagram size both
	// ends use, which the server process inherits through its environment.
	if n, err := strconv.Atoi(os.Getenv(PacketSizeEnv)); err == nil && n > 0 {
		o = append(o, erpc.WithMaxPacketSize(n))
	}
	return o
}

// erpcListen opens an endpoint on addr that serves srv, or, with srv nil,
// only makes calls. With loss > 0 its transport drops each datagram it
// sends with that probability (erpc's fault injection, internal/faults):
// the transport addr names, opened here and given to the endpoint.
func erpcListen(srv *erpc.Server, addr string, loss float64, opts []erpc.Option) (*erpc.Endpoint, error) {
	if loss > 0 {
		tr, err := faults.Listen(addr, loss, uint64(time.Now().UnixNano()))
		if err != nil {
			return nil, err
		}
		opts = append(slices.Clip(opts), erpc.WithTransport(tr))
	}
	if srv == nil {
		return erpc.Listen(addr, opts...)
	}
	return srv.Listen(addr, opts...)
}

// erpcListenAddr is where a server of the given transport listens.
func erpcListenAddr(transport string) string {
	switch transport {
	case "shm":
		return fmt.Sprintf("shm:///tmp/erpc-bench-%d.sock", os.Getpid())
	case "memnet":
		return fmt.Sprintf("mem://erpc-bench-srv-%d", memSeq.Add(1))
	case "tcp":
		return "tcp://127.0.0.1:0"
	}
	return "127.0.0.1:0"
}

// erpcClientAddr is where a client endpoint of the transport listens.
func erpcClientAddr(transport string) string {
	switch transport {
	case "shm":
		return "shm://"
	case "memnet":
		return fmt.Sprintf("mem://erpc-bench-cli-%d", memSeq.Add(1))
	case "tcp":
		return "tcp://"
	}
	return "127.0.0.1:0"
}

type erpcServer struct {
	ep      *erpc.Endpoint
	at      string
	xdpMode string // over AF_XDP: its mode
}

// BenchServer is the erpc server every scenario's erpc side serves.
// Echo answers with a copy of the request in ResponseBuffer memory, which
// Respond sends without another copy: what BENCHMARKS.md measured.
// (r.Respond(r.Data()) would send the request's own buffer back and skip
// the copy; that is not what is measured here.) Sink answers every
// request with 32 bytes, for bandwidth runs. Block blocks for BlockFor
// (block.go), for the latency scenario's -blocking row.
func BenchServer() (*erpc.Server, error) {
	srv := erpc.NewServer()
	if err := handleBlock(srv); err != nil {
		return nil, err
	}
	if err := srv.HandleRaw("Echo", func(r erpc.Request) {
		out := r.ResponseBuffer(len(r.Data()))
		copy(out, r.Data())
		r.Respond(out)
	}); err != nil {
		return nil, err
	}
	if err := srv.HandleRaw("Sink", func(r erpc.Request) {
		out := r.ResponseBuffer(32)
		copy(out, r.Data())
		r.Respond(out)
	}); err != nil {
		return nil, err
	}
	return srv, nil
}

func newErpcServer(cfg proc.Config) (proc.Impl, error) {
	addr := erpcListenAddr(cfg.Transport)
	srv, err := BenchServer()
	if err != nil {
		return nil, err
	}
	opts := ErpcOptions(cfg.Busy, cfg.Window)
	var mode string
	if cfg.Listen != "" { // over a veth pair (Veth)
		var tr transport.Transport
		if opts, tr, err = xdpOpts(cfg.Transport, cfg.Listen, opts); err != nil {
			return nil, err
		}
		addr = net.JoinHostPort(cfg.Listen, "0")
		if tr != nil {
			addr, mode = tr.LocalAddr().String(), modeOf(tr)
		}
	}
	ep, err := erpcListen(srv, addr, cfg.Loss, opts)
	if err != nil {
		return nil, fmt.Errorf("erpc listen on %q: %w", addr, err)
	}
	switch cfg.Transport {
	case "udp":
		addr = ep.Addr().String()
	case "tcp":
		addr = ep.Target()
	case "shm":
		// The socket path is the address; it goes when the endpoint closes.
	}
	return &erpcServer{ep: ep, at: addr, xdpMode: mode}, nil
}

func (s *erpcServer) Addr() string { return s.at }
func (s *erpcServer) Close()       { s.ep.Close() }
func (s *erpcServer) Control(args []string) (string, error) {
	if args[0] == "xdpmode" {
		return s.xdpMode, nil
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

// erpcMethod picks the handler for a point: Echo, or Sink for 32-byte
// responses to larger requests.
func erpcMethod(p meter.Point) (string, error) {
	switch {
	case p.Resp == p.Size:
		return "Echo", nil
	case p.Resp == 32:
		return "Sink", nil
	}
	return "", fmt.Errorf("response size %d: erpc server answers echo or 32 bytes", p.Resp)
}

// ErpcClient is the client side: one endpoint, sessions dialed to the
// server as points need them. With async set it drives calls from the
// endpoint's loop through Session.Go continuations (system "erpc"),
// otherwise from goroutines blocked in Session.Call ("erpc-call").
type ErpcClient struct {
	Ep       *erpc.Endpoint
	Target   string
	sessions []*erpc.Session
	Async    bool
	opts     []erpc.Option // the endpoint's, for Handshake's endpoints
}

func newErpcClient(srvAddr, transport string, opts []erpc.Option, loss float64, async bool) (*ErpcClient, error) {
	laddr := erpcClientAddr(transport)
	if veth != nil {
		var err error
		if opts, _, err = xdpOpts(transport, veth.Ifname+"/"+veth.ClientAddr.String(), opts); err != nil {
			return nil, err
		}
		laddr = net.JoinHostPort(veth.ClientAddr.String(), "0")
	}
	ep, err := erpcListen(nil, laddr, loss, opts)
	if err != nil {
		return nil, fmt.Errorf("erpc.Listen(%q): %w", laddr, err)
	}
	c := &ErpcClient{Ep: ep, Target: srvAddr, Async: async, opts: opts}
	if err := c.EnsureSessions(1); err != nil {
		ep.Close()
		return nil, err
	}
	return c, nil
}

// EnsureSessions dials until the client has n sessions, several at a
// time: each Dial waits a round trip for the server to accept.
func (c *ErpcClient) EnsureSessions(n int) error {
	need := n - len(c.sessions)
	if need <= 0 {
		return nil
	}
	out := make([]*erpc.Session, need)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(need, 64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= need {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				s, err := c.Ep.Dial(ctx, c.Target)
				cancel()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("dial %s: %w", c.Target, err)
					}
					mu.Unlock()
					return
				}
				out[i] = s
			}
		}()
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			c.sessions = append(c.sessions, s)
		}
	}
	return firstErr
}

func (c *ErpcClient) Close() {
	for _, s := range c.sessions {
		s.Close()
	}
	c.Ep.Close()
}

func (c *ErpcClient) Run(p meter.Point, m *meter.Meter) error {
	method, err := erpcMethod(p)
	if err != nil {
		return err
	}
	if err := c.EnsureSessions(max(p.Sessions, 1)); err != nil {
		return err
	}
	sess := c.sessions[:max(p.Sessions, 1)]
	before := c.Ep.Stats()
	if c.Async {
		err = c.runAsync(p, m, method, sess)
	} else {
		err = c.runBlocking(p, m, method, sess)
	}
	after := c.Ep.Stats()
	// The client's protocol counters over the point (warm-up included):
	// retransmissions explain a latency tail that is not the network's.
	m.SetExtra("retransmits", after.Retransmits-before.Retransmits)
	m.SetExtra("nacks", after.NacksReceived-before.NacksReceived)
	return err
}

// asyncSlot is one call in flight, reissued from its own continuation;
// its callback is bound once, so reissuing allocates nothing.
type asyncSlot struct {
	d    *asyncDriver
	t0   time.Time
	req  []byte
	resp []byte
	fn   func([]byte, error)
	si   int // the session of the call in flight
}

type asyncDriver struct {
	m      *meter.Meter
	rec    *meter.Recorder // touched only on the endpoint's loop
	method string
	sess   []*erpc.Session
	next   atomic.Uint64
	want   int
	wg     sync.WaitGroup
	used   []bool // sessions that completed a measured call (loop only)
}

func (s *asyncSlot) issue() {
	d := s.d
	i := d.next.Add(1)
	s.t0 = time.Now()
	s.si = int(i % uint64(len(d.sess)))
	d.sess[s.si].Go(d.method, s.req, s.resp[:0], s.fn)
}

func (s *asyncSlot) complete(resp []byte, err error) {
	d := s.d
	if err == nil && len(resp) != d.want {
		err = meter.ErrShortResponse
	}
	if err == nil && d.m.Phase.Load() == meter.PhaseMeasure {
		d.used[s.si] = true
	}
	d.rec.Done(d.m, s.t0, err)
	if d.m.Stopped() {
		d.wg.Done()
		return
	}
	s.issue()
}

func (c *ErpcClient) runAsync(p meter.Point, m *meter.Meter, method string, sess []*erpc.Session) error {
	d := &asyncDriver{m: m, rec: m.Recorder(), method: method, sess: sess, want: p.Resp, used: make([]bool, len(sess))}
	slots := make([]*asyncSlot, p.Conc)
	for i := range slots {
		s := &asyncSlot{d: d, req: meter.Payload(p.Size), resp: make([]byte, 0, p.Resp)}
		s.fn = s.complete
		slots[i] = s
	}
	d.wg.Add(len(slots))
	for _, s := range slots {
		s.issue()
	}
	d.wg.Wait()
	n := 0
	for _, u := range d.used {
		if u {
			n++
		}
	}
	m.SetExtra("sessions_used", n)
	return nil
}

func (c *ErpcClient) runBlocking(p meter.Point, m *meter.Meter, method string, sess []*erpc.Session) error {
	var wg sync.WaitGroup
	ctx := context.Background()
	for g := range p.Conc {
		rec := m.Recorder()
		req, resp := meter.Payload(p.Size), make([]byte, 0, p.Resp)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := g; !m.Stopped(); k += p.Conc {
				t0 := time.Now()
				out, err := sess[k%len(sess)].Call(ctx, method, req, resp[:0])
				if err == nil && len(out) != p.Resp {
					err = meter.ErrShortResponse
				}
				rec.Done(m, t0, err)
			}
		}()
	}
	wg.Wait()
	return nil
}
