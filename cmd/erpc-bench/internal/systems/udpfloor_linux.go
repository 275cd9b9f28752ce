package systems

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// udp-floor is the cheapest UDP ping-pong the kernel offers, the floor
// under erpc's and raw-udp's UDP numbers: one datagram per request and one
// per response, a non-blocking recv and send per datagram (raw system
// calls with MSG_DONTWAIT; no netpoller, no recvmmsg or sendmmsg, no GSO
// or GRO, no header: the datagram is the payload), client and server each
// spinning on its own socket from a goroutine locked to its thread. It
// always spins, whatever -busy says: a floor does not wait any other way.
// Only an idle server (no datagram for udpFloorIdle, such as while the
// other systems are measured) parks in poll(2), so that it leaves their
// CPU alone; a point's traffic wakes it.
//
// Both sockets are connected (the client's to the server, the server's to
// the client, which the client names on the control channel, "peer"), and
// move datagrams with send and recv, that is sendto and recvfrom with no
// address. Measured on the 2-CPU loopback this was written on (Linux 6.18,
// 32-byte datagrams): a connected send costs 2.44-2.64 µs against
// 2.77-2.94 µs for sendto with an address (the route is cached in the
// socket), a recv without the source address 1.34-1.42 µs against
// 1.35-1.44 µs; a ping-pong between the two CPUs took 8.3-8.5 µs a round
// trip with both ends connected, 8.8-9.0 µs with neither.
//
// udp-plain is the same ping-pong with neither socket connected: every
// send is a sendto naming the peer, every receive a recvfrom that learns
// the sender, the server answering whoever sent. That is issue 16's
// definition of the floor ("a plain non-blocking recvfrom/sendto
// ping-pong on locked threads"), and the way erpc's server socket works;
// udp-floor, the connected one, is the stricter floor below it.
//
// The server answers each request with its first resp bytes (an echo when
// the sizes are equal; zeros pad a longer response), resp being what the
// client set for the point on the control channel ("resp N").
//
// With -c N the client keeps N requests in flight. Each carries its slot's
// tag in its first four bytes, so a response finds its slot and a late
// answer to a request given up on (no response within udpFloorRTO, which
// counts as an error: nothing is retransmitted) is recognised and
// dropped. Requests or responses shorter than four bytes cannot carry the
// tag and run with -c 1 only; a lost datagram then stops the point.

type udpFloorServer struct {
	fd    int
	port  int
	plain bool         // udp-plain: unconnected, answers each datagram's sender
	resp  atomic.Int64 // response bytes; -1: echo
	stop  atomic.Bool
	done  chan struct{}
}

func newUDPFloorServer(cfg proc.Config) (proc.Impl, error) {
	fd, port, err := udpFloorSocket()
	if err != nil {
		return nil, err
	}
	s := &udpFloorServer{fd: fd, port: port, plain: cfg.System == "udp-plain", done: make(chan struct{})}
	s.resp.Store(-1)
	go s.serve()
	return s, nil
}

func (s *udpFloorServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *udpFloorServer) Close() {
	s.stop.Store(true)
	<-s.done
	unix.Close(s.fd)
}

func (s *udpFloorServer) Control(args []string) (string, error) {
	switch args[0] {
	case "peer": // peer ip:port: answer (only) this client
		if len(args) != 2 {
			return "", errors.New("usage: peer ip:port")
		}
		return "", udpFloorConnect(s.fd, args[1])
	case "resp": // resp n: answer with n bytes
		if len(args) != 2 {
			return "", errors.New("usage: resp bytes")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 || n > udpFloorMax {
			return "", fmt.Errorf("resp: want 0..%d bytes, not %q", udpFloorMax, args[1])
		}
		s.resp.Store(int64(n))
		return "", nil
	}
	return "", fmt.Errorf("unknown command %q", args[0])
}

// serve answers datagrams until close, spinning while there is traffic.
// udp-floor: until a "peer" command has connected the socket, requests go
// unanswered (send fails with EDESTADDRREQ). udp-plain answers each
// datagram's sender.
func (s *udpFloorServer) serve() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 1<<16)
	var from *udpFloorAddr
	if s.plain {
		from = new(udpFloorAddr)
	}
	pfd := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	spins := 0
	var idle time.Time // start of the current run of empty receives
	for {
		n, e := udpFloorRecv(s.fd, buf, from)
		if e == 0 {
			resp := int(s.resp.Load())
			if resp < 0 {
				resp = n
			} else if resp > n {
				clear(buf[n:resp])
			}
			udpFloorSend(s.fd, buf, resp, from) // a failed send is a lost datagram
			spins, idle = 0, time.Time{}
			continue
		}
		// EAGAIN, EINTR, or an error from an earlier datagram (an ICMP
		// port unreachable from a client gone: ECONNREFUSED): try again.
		if spins++; spins&255 != 0 {
			continue
		}
		if s.stop.Load() {
			return
		}
		now := time.Now()
		if idle.IsZero() {
			idle = now
			continue
		}
		if now.Sub(idle) < udpFloorIdle {
			continue
		}
		// Idle: park in poll(2), a blocking system call that gives the
		// thread's P back, and look at stop every 100 ms.
		for !s.stop.Load() {
			if k, _ := unix.Poll(pfd, 100); k > 0 {
				break
			}
		}
		spins, idle = 0, time.Time{}
	}
}

type udpFloorClient struct {
	srv  *proc.Server
	fd   int
	buf  []byte
	to   *udpFloorAddr // udp-plain: the server's address, for sendto; nil when connected
	from *udpFloorAddr // udp-plain: where recvfrom writes the sender's
	next uint32        // the next point's first tag: tags never repeat across points
}

// newUDPFloorClient is udp-floor's client, or with plain udp-plain's.
func newUDPFloorClient(srv *proc.Server, plain bool) (meter.Client, error) {
	fd, port, err := udpFloorSocket()
	if err != nil {
		return nil, err
	}
	c := &udpFloorClient{srv: srv, fd: fd, buf: make([]byte, 1<<16)}
	if plain {
		if c.to, err = udpFloorAddrOf(srv.Addr); err != nil {
			unix.Close(fd)
			return nil, err
		}
		c.from = new(udpFloorAddr)
		return c, nil
	}
	if err := udpFloorConnect(fd, srv.Addr); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if _, err := srv.Ctl("peer 127.0.0.1:" + strconv.Itoa(port)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("udp-floor server: %w", err)
	}
	return c, nil
}

func (c *udpFloorClient) Close() { unix.Close(c.fd) }

// udpFloorCheck refuses the points udp-floor cannot run.
func udpFloorCheck(p meter.Point) error {
	if p.Size > udpFloorMax || p.Resp > udpFloorMax {
		return fmt.Errorf("udp-floor: a %d-byte request or %d-byte response does not fit one datagram (at most %d bytes)",
			p.Size, p.Resp, udpFloorMax)
	}
	if p.Conc > 1 && min(p.Size, p.Resp) < udpFloorTag {
		return fmt.Errorf("udp-floor: -c %d needs requests and responses of %d bytes or more (the slot's tag); smaller ones run with -c 1 only",
			p.Conc, udpFloorTag)
	}
	return nil
}

// udpFloorRun is one point's client state.
type udpFloorRun struct {
	c      *udpFloorClient
	m      *meter.Meter
	rec    *meter.Recorder
	req    []byte // at least one byte long; the request is req[:size]
	size   int
	tagged bool
	base   uint32      // the point's first tag
	tags   []uint32    // each slot's request in flight
	t0     []time.Time // when it was sent
	live   []bool      // the slot has a request in flight
	active int
}

// issue sends slot i's next request.
func (r *udpFloorRun) issue(i int) {
	if r.tagged {
		r.tags[i] += uint32(len(r.tags))
		binary.LittleEndian.PutUint32(r.req, r.tags[i])
	}
	r.t0[i] = time.Now()
	// A failed send (ENOBUFS, or ECONNREFUSED from a server gone) is a
	// lost datagram: the slot times out.
	udpFloorSend(r.c.fd, r.req, r.size, r.c.to)
}

// complete records slot i's call and sends its next request, or retires
// the slot once the point has stopped.
func (r *udpFloorRun) complete(i int, err error) {
	r.rec.Done(r.m, r.t0[i], err)
	if r.m.Stopped() {
		r.live[i] = false
		r.active--
		return
	}
	r.issue(i)
}

// Run keeps p.conc requests in flight from one goroutine locked to its
// thread, spinning on the socket.
func (c *udpFloorClient) Run(p meter.Point, m *meter.Meter) error {
	if err := udpFloorCheck(p); err != nil {
		return err
	}
	if _, err := c.srv.Ctl("resp " + strconv.Itoa(p.Resp)); err != nil {
		return fmt.Errorf("udp-floor server: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Whatever is still queued answers requests given up on.
	for {
		if _, e := udpFloorRecv(c.fd, c.buf, c.from); e != 0 && e != unix.ECONNREFUSED {
			break
		}
	}
	n := p.Conc
	r := &udpFloorRun{c: c, m: m, rec: m.Recorder(), req: meter.Payload(max(p.Size, udpFloorTag)), size: p.Size,
		tagged: min(p.Size, p.Resp) >= udpFloorTag, base: c.next,
		tags: make([]uint32, n), t0: make([]time.Time, n), live: make([]bool, n), active: n}
	for i := range n {
		r.tags[i] = r.base + uint32(i) - uint32(n) // issue adds n
		r.live[i] = true
		r.issue(i)
	}
	defer func() {
		// The next point's tags start after every tag of this one.
		var span uint32
		for _, t := range r.tags {
			span = max(span, t-r.base+1)
		}
		c.next = r.base + span
	}()
	spins := 0
	for r.active > 0 {
		k, e := udpFloorRecv(c.fd, c.buf, c.from)
		if e == 0 {
			spins = 0
			i := 0
			if r.tagged {
				if k < udpFloorTag {
					continue
				}
				tag := binary.LittleEndian.Uint32(c.buf)
				i = int((tag - r.base) % uint32(n))
				if r.tags[i] != tag {
					continue // the answer to a request given up on
				}
			}
			if !r.live[i] {
				continue
			}
			var err error
			if k != p.Resp {
				err = meter.ErrShortResponse
			}
			r.complete(i, err)
			continue
		}
		switch e {
		case unix.EAGAIN, unix.EINTR, unix.ECONNREFUSED:
		default:
			return fmt.Errorf("udp-floor: recv: %w", e)
		}
		if spins++; spins&255 != 0 {
			continue
		}
		now := time.Now()
		for i := range n {
			if !r.live[i] || now.Sub(r.t0[i]) < udpFloorRTO {
				continue
			}
			if !r.tagged {
				return errors.New("udp-floor: no response within 1 s, and requests this short cannot be told apart to go on")
			}
			r.complete(i, errFloorLost)
		}
	}
	return nil
}
