package systems

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
)

// raw-udp is the floor for UDP: the same sockets, system calls, datagram
// size and waiting as erpc's UDP transport (see udpSock), and no protocol
// beyond what a stream of messages needs to not overflow the receiver:
//
//   - a 32-byte header per datagram: message id, offset, total length,
//     wanted response length, the sender's count of data datagrams received
//     (a cumulative acknowledgement), kind, payload bytes per datagram and
//     the sender's window;
//   - a window: a sender keeps at most rawWindow bytes of datagrams not yet
//     acknowledged; acknowledgements ride on the datagrams going the other
//     way, and a receiver that has nothing to send acknowledges with an
//     empty datagram once a quarter of the window is unacknowledged;
//   - messages in one direction are sent one after the other, so the
//     receiver reassembles one at a time into one buffer.
//
// There is no retransmission: a message with a lost datagram is never
// completed; the client counts it as an error after rawRTO and writes the
// window's unacknowledged datagrams off, so loss shows in the errors
// column instead of hanging the run.

type rawUDPServer struct {
	sock *udpSock
	done chan struct{}
}

func newRawUDPServer(cfg proc.Config) (proc.Impl, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: rawUDPListenIP(cfg)})
	if err != nil {
		return nil, err
	}
	sock, err := newUDPSock(conn, cfg.Busy, rawIdle)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &rawUDPServer{sock: sock, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

func (s *rawUDPServer) Addr() string { return s.sock.Addr() }
func (s *rawUDPServer) Close()       { s.sock.Close(); <-s.done }
func (s *rawUDPServer) Control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

// serve answers each request: an echo sends the request's own buffer
// back (the reassembly moves on to a fresh one from a free list), a
// smaller response its first bytes.
func (s *rawUDPServer) serve() {
	defer close(s.done)
	if s.sock.busy {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	r := newRawStream(s.sock, 1472)
	// Responses and buffers come from free lists, so the floor allocates
	// nothing per call either.
	var freeBufs [][]byte
	var freeOuts []*rawOut
	r.sentFn = func(o *rawOut) {
		freeBufs = append(freeBufs, o.data[:0])
		o.data = nil
		freeOuts = append(freeOuts, o)
	}
	r.deliver = func(seq uint32, msg []byte, resp int) {
		var out *rawOut
		if n := len(freeOuts); n > 0 {
			out, freeOuts = freeOuts[n-1], freeOuts[:n-1]
		} else {
			out = new(rawOut)
		}
		*out = rawOut{seq: seq}
		if resp <= len(msg) {
			// The response is the request's first bytes: hand the
			// reassembly buffer over and take another.
			out.data = msg[:resp]
			r.buf = nil
			if n := len(freeBufs); n > 0 {
				r.buf, freeBufs = freeBufs[n-1], freeBufs[:n-1]
			}
		} else {
			out.data = make([]byte, resp)
			copy(out.data, msg)
		}
		r.push(out)
	}
	for {
		var deadline time.Time
		if r.pending() || r.inflight() > 0 {
			deadline = time.Now().Add(rawRTO)
		}
		err := r.receive(deadline, true)
		switch {
		case errors.Is(err, errTimeout):
			// The client stopped acknowledging: write the window off.
			r.writeOff()
		case err != nil:
			return
		}
		if r.pump() != nil {
			return
		}
	}
}

type rawUDPClient struct {
	sock  *udpSock
	dgram int
	seq   uint32
	r     *rawStream // kept across points: the counters are cumulative
}

func newRawUDPClient(addr string, busy bool, rawDgram, rawWindow int) (meter.Client, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp4", nil, ua)
	if err != nil {
		return nil, err
	}
	sock, err := newUDPSock(conn, busy, 0)
	if err != nil {
		conn.Close()
		return nil, err
	}
	dgram := rawDgram
	if dgram == 0 {
		dgram = erpcPacketSize()
	}
	r := newRawStream(sock, dgram)
	if rawWindow > 0 {
		r.window = max(1, rawWindow/dgram)
	}
	return &rawUDPClient{sock: sock, dgram: dgram, r: r}, nil
}

func (c *rawUDPClient) Close() { c.sock.Close() }

type rawSlot struct {
	seq    uint32
	t0     time.Time
	active bool
	out    *rawOut
}

// errLost is a message not answered within rawRTO on a network with no
// retransmission.
var errLost = errors.New("lost datagram: message not answered within 1 s (raw-udp does not retransmit)")

// Run keeps p.conc messages going from one goroutine: send them all, then
// for each completed response record it and send the next.
func (c *rawUDPClient) Run(p meter.Point, m *meter.Meter) error {
	if c.sock.busy {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	rec := m.Recorder()
	req := meter.Payload(p.Size)
	r := c.r
	lost0 := r.lostDgrams
	slots := make([]rawSlot, p.Conc)
	for i := range slots {
		slots[i].out = new(rawOut)
	}
	bySeq := map[uint32]int{}
	active := 0
	r.deliver = func(seq uint32, msg []byte, _ int) {
		i, ok := bySeq[seq]
		if !ok || !slots[i].active || slots[i].seq != seq {
			return // late, from a message already given up
		}
		var err error
		if len(msg) != p.Resp {
			err = meter.ErrShortResponse
		}
		c.Finish(r, slots, bySeq, i, rec, m, req, p, err, &active)
	}
	for i := range slots {
		c.issue(r, slots, bySeq, i, req, p)
		active++
	}
	if err := r.pump(); err != nil {
		return err
	}
	for active > 0 {
		err := r.receive(time.Now().Add(rawRTO/4), false)
		if err != nil && !errors.Is(err, errTimeout) {
			return err
		}
		if errors.Is(err, errTimeout) || time.Since(r.lastAckAt) > rawRTO/4 {
			now := time.Now()
			expired := false
			for i := range slots {
				if slots[i].active && now.Sub(slots[i].t0) > rawRTO {
					// It may still be queued: leave it to be skipped.
					slots[i].out.dead = true
					slots[i].out = new(rawOut)
					c.Finish(r, slots, bySeq, i, rec, m, req, p, errLost, &active)
					expired = true
				}
			}
			if expired {
				r.writeOff()
			}
		}
		if err := r.pump(); err != nil {
			return err
		}
	}
	m.SetExtra("lost_datagrams", r.lostDgrams-lost0)
	m.SetExtra("datagram_bytes", c.dgram)
	return nil
}

func (c *rawUDPClient) issue(r *rawStream, slots []rawSlot, bySeq map[uint32]int, i int, req []byte, p meter.Point) {
	sl := &slots[i]
	if sl.seq != 0 {
		delete(bySeq, sl.seq)
	}
	c.seq++
	if c.seq == 0 {
		c.seq++
	}
	sl.seq, sl.active, sl.t0 = c.seq, true, time.Now()
	bySeq[sl.seq] = i
	*sl.out = rawOut{seq: sl.seq, data: req, resp: p.Resp}
	r.push(sl.out)
}

func (c *rawUDPClient) Finish(r *rawStream, slots []rawSlot, bySeq map[uint32]int, i int, rec *meter.Recorder,
	m *meter.Meter, req []byte, p meter.Point, err error, active *int) {
	rec.Done(m, slots[i].t0, err)
	if m.Stopped() {
		slots[i].active = false
		delete(bySeq, slots[i].seq)
		*active--
		return
	}
	c.issue(r, slots, bySeq, i, req, p)
}
