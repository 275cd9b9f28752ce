package systems

import (
	"encoding/binary"
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

const (
	rawHdr    = 32
	rawWindow = 4 << 20 // bytes in flight per direction
	rawIdle   = 50 * time.Millisecond
	rawRTO    = time.Second // a message not answered by then is lost
)

const (
	kindData uint32 = iota
	kindAck
)

type rawHeader struct {
	seq, off, total, resp, ack, kind, chunk, win uint32
}

func (h *rawHeader) put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], h.seq)
	binary.LittleEndian.PutUint32(b[4:], h.off)
	binary.LittleEndian.PutUint32(b[8:], h.total)
	binary.LittleEndian.PutUint32(b[12:], h.resp)
	binary.LittleEndian.PutUint32(b[16:], h.ack)
	binary.LittleEndian.PutUint32(b[20:], h.kind)
	binary.LittleEndian.PutUint32(b[24:], h.chunk)
	binary.LittleEndian.PutUint32(b[28:], h.win)
}

func (h *rawHeader) get(b []byte) {
	h.seq = binary.LittleEndian.Uint32(b[0:])
	h.off = binary.LittleEndian.Uint32(b[4:])
	h.total = binary.LittleEndian.Uint32(b[8:])
	h.resp = binary.LittleEndian.Uint32(b[12:])
	h.ack = binary.LittleEndian.Uint32(b[16:])
	h.kind = binary.LittleEndian.Uint32(b[20:])
	h.chunk = binary.LittleEndian.Uint32(b[24:])
	h.win = binary.LittleEndian.Uint32(b[28:])
}

// rawOut is a message being sent.
type rawOut struct {
	seq  uint32
	data []byte
	resp int // response wanted (requests)
	off  int
	dead bool
}

// rawStream is one side's state: what it sends, under the window, and the
// message it is reassembling.
type rawStream struct {
	s      *udpSock
	chunk  int // payload bytes per datagram
	window int // datagrams

	sent, acked, floor uint32 // data datagrams sent, acknowledged, written off up to
	lastAckAt          time.Time
	q                  []*rawOut
	qhead              int
	lostDgrams         int64

	recvd, ackSent uint32 // data datagrams received, acknowledged
	peerWin        int    // the peer's window, in datagrams
	cur            uint32 // message being reassembled (0: none)
	got, total     int
	buf            []byte
	lostMsgs       int64

	hdr     [rawHdr]byte
	h       rawHeader
	deliver func(seq uint32, msg []byte, resp int)
	sentFn  func(*rawOut) // if set, called once a message's last datagram is sent
}

func newRawStream(s *udpSock, dgram int) *rawStream {
	return &rawStream{s: s, chunk: dgram - rawHdr, window: max(16, rawWindow/dgram), lastAckAt: time.Now()}
}

func after(a, b uint32) bool { return int32(a-b) > 0 }

// inflight is the number of datagrams sent and neither acknowledged nor
// written off.
func (r *rawStream) inflight() int {
	base := r.acked
	if after(r.floor, base) {
		base = r.floor
	}
	if after(base, r.sent) {
		return 0
	}
	return int(r.sent - base)
}

// writeOff gives up on the datagrams in flight (lost).
func (r *rawStream) writeOff() {
	if n := r.inflight(); n > 0 {
		r.lostDgrams += int64(n)
		r.floor = r.sent
	}
	r.lastAckAt = time.Now()
}

func (r *rawStream) push(o *rawOut) {
	if r.qhead > 0 && r.qhead == len(r.q) {
		clear(r.q)
		r.q, r.qhead = r.q[:0], 0
	}
	r.q = append(r.q, o)
}

func (r *rawStream) pending() bool { return r.qhead < len(r.q) }

// pump queues datagrams while the window allows, then sends them.
func (r *rawStream) pump() error {
	queued := false
	for r.qhead < len(r.q) && r.inflight() < r.window {
		o := r.q[r.qhead]
		if o.dead {
			r.q[r.qhead] = nil
			r.qhead++
			continue
		}
		k := min(r.chunk, len(o.data)-o.off)
		r.h = rawHeader{seq: o.seq, off: uint32(o.off), total: uint32(len(o.data)), resp: uint32(o.resp),
			ack: r.recvd, kind: kindData, chunk: uint32(r.chunk), win: uint32(r.window)}
		r.h.put(r.hdr[:])
		if err := r.s.queue(r.hdr[:], o.data[o.off:o.off+k]); err != nil {
			return err
		}
		queued = true
		r.ackSent = r.recvd
		r.sent++
		o.off += k
		if o.off >= len(o.data) {
			r.q[r.qhead] = nil
			r.qhead++
			if r.sentFn != nil {
				// Sent before the next input: pump flushes below, and
				// queue flushes when its batch is full.
				r.sentFn(o)
			}
		}
	}
	// Nothing to carry it: acknowledge on its own once a quarter of the
	// window is waiting (a blocked sender has a whole window waiting).
	if !queued && r.recvd-r.ackSent >= uint32(max(r.peerWin/4, 1)) {
		r.h = rawHeader{ack: r.recvd, kind: kindAck, chunk: uint32(r.chunk), win: uint32(r.window)}
		r.h.put(r.hdr[:])
		if err := r.s.queue(r.hdr[:], nil); err != nil {
			return err
		}
		r.ackSent = r.recvd
		queued = true
	}
	if queued {
		return r.s.flush()
	}
	return nil
}

// input handles one received datagram.
func (r *rawStream) input(d []byte) {
	if len(d) < rawHdr {
		return
	}
	var h rawHeader
	h.get(d)
	if after(h.ack, r.acked) {
		r.acked = h.ack
		r.lastAckAt = time.Now()
	}
	if c := int(h.chunk); c > 0 && c != r.chunk && c <= 1<<16 {
		// Answer with the datagram size the client uses.
		r.chunk, r.window = c, max(16, rawWindow/(c+rawHdr))
	}
	if h.win > 0 {
		r.peerWin = int(h.win)
	}
	if h.kind != kindData {
		return
	}
	r.recvd++
	total, off, n := int(h.total), int(h.off), len(d)-rawHdr
	if total > 64<<20 || int(h.resp) > 64<<20 || off+n > total {
		return
	}
	if h.seq != r.cur {
		if r.cur != 0 && r.got < r.total {
			r.lostMsgs++ // abandoned by its sender: a datagram was lost
		}
		r.cur, r.got, r.total = h.seq, 0, total
		if cap(r.buf) < total {
			r.buf = make([]byte, total)
		}
		r.buf = r.buf[:total]
	}
	r.got += copy(r.buf[off:], d[rawHdr:])
	if r.got >= r.total {
		r.cur = 0
		r.deliver(h.seq, r.buf[:total], int(h.resp))
	}
}

// receive reads one batch and feeds every datagram to input; with from set
// it also makes replies go to the batch's sender.
func (r *rawStream) receive(deadline time.Time, from bool) error {
	n, err := r.s.recv(deadline)
	if err != nil {
		return err
	}
	for i := range n {
		data, seg := r.s.message(i)
		if from {
			r.s.replyTo(i)
		}
		if seg <= 0 {
			r.input(data)
			continue
		}
		for len(data) > 0 {
			k := min(seg, len(data))
			r.input(data[:k])
			data = data[k:]
		}
	}
	return nil
}

type rawUDPServer struct {
	sock *udpSock
	done chan struct{}
}

func newRawUDPServer(cfg proc.Config) (proc.Impl, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
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
