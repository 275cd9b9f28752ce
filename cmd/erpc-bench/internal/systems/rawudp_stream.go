package systems

import (
	"encoding/binary"
	"time"
)

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
