package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
)

// raw-udp is the floor for UDP: no protocol beyond a 20-byte header
// (message id, offset, total length, wanted response length, datagram
// payload), no
// retransmission, no flow control. A message larger than one datagram goes
// as consecutive datagrams of -raw-dgram bytes, the packet size erpc uses.
// For throughput the client keeps several messages in flight on one
// socket; the bytes in flight are capped (rawBudget) because, without
// flow control, more would overflow the socket buffers and be lost.

const (
	rawHdr    = 20
	rawBudget = 2 << 20 // request bytes in flight at most
	rawIdle   = 50 * time.Millisecond
	rawRTO    = 200 * time.Millisecond // a message not answered by then counts as an error
)

type rawUDPServer struct {
	sock *udpSock
	done chan struct{}
}

func newRawUDPServer(cfg srvConfig) (serverImpl, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	sock, err := newUDPSock(conn, cfg.busy, rawIdle)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &rawUDPServer{sock: sock, done: make(chan struct{})}
	go s.serve()
	return s, nil
}

func (s *rawUDPServer) addr() string { return s.sock.conn.LocalAddr().String() }
func (s *rawUDPServer) close()       { s.sock.conn.Close(); <-s.done }
func (s *rawUDPServer) control(args []string) (string, error) {
	return "", fmt.Errorf("unknown command %q", args[0])
}

// serve reassembles each request in msg and sends the response from the
// same memory: an echo sends the request back, a smaller response its
// first bytes.
func (s *rawUDPServer) serve() {
	defer close(s.done)
	if s.sock.busy {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	dgram := make([]byte, 65536)
	out := make([]byte, 65536)
	msg := make([]byte, 64<<10)
	var cur uint32
	got := 0
	for {
		n, err := s.sock.recv(dgram, time.Time{})
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, errTimeout) {
				return
			}
			continue
		}
		if n < rawHdr {
			continue
		}
		seq := binary.LittleEndian.Uint32(dgram[0:])
		off := int(binary.LittleEndian.Uint32(dgram[4:]))
		total := int(binary.LittleEndian.Uint32(dgram[8:]))
		resp := int(binary.LittleEndian.Uint32(dgram[12:]))
		if total > 64<<20 || resp > 64<<20 || off+n-rawHdr > total {
			continue
		}
		if seq != cur {
			cur, got = seq, 0
		}
		if len(msg) < max(total, resp) {
			msg = make([]byte, max(total, resp))
		}
		got += copy(msg[off:total], dgram[rawHdr:n])
		if got < total {
			continue
		}
		cur = 0
		s.sock.replyToLast()
		chunk := int(binary.LittleEndian.Uint32(dgram[16:]))
		chunk = min(max(chunk, 1), len(out)-rawHdr)
		for o := 0; o < resp || o == 0; o += chunk {
			k := copy(out[rawHdr:], msg[o:min(resp, o+chunk)])
			putHdr(out, seq, o, resp, 0, 0)
			if s.sock.send(out[:rawHdr+k]) != nil {
				break
			}
		}
	}
}

// putHdr writes a datagram header: message id, offset, total length, the
// response length wanted and the payload per datagram (so responses use
// the client's datagram size).
func putHdr(b []byte, seq uint32, off, total, resp, chunk int) {
	binary.LittleEndian.PutUint32(b[0:], seq)
	binary.LittleEndian.PutUint32(b[4:], uint32(off))
	binary.LittleEndian.PutUint32(b[8:], uint32(total))
	binary.LittleEndian.PutUint32(b[12:], uint32(resp))
	binary.LittleEndian.PutUint32(b[16:], uint32(chunk))
}

type rawUDPClient struct {
	sock  *udpSock
	dgram int
}

func newRawUDPClient(addr string, cfg *config) (client, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp4", nil, ua)
	if err != nil {
		return nil, err
	}
	sock, err := newUDPSock(conn, cfg.busy, 0)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &rawUDPClient{sock: sock, dgram: cfg.rawDgram}, nil
}

func (c *rawUDPClient) close() { c.sock.conn.Close() }

type rawSlot struct {
	seq    uint32
	t0     time.Time
	got    int
	active bool
}

// run keeps inflight messages going from one goroutine: send them all,
// then for each completed response record it and send the next.
func (c *rawUDPClient) run(p point, m *meter) error {
	if c.sock.busy {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	inflight := rawInflight(p)
	rec := m.recorder()
	req := payload(p.size)
	chunk := c.dgram - rawHdr
	out := make([]byte, c.dgram)
	in := make([]byte, 65536)
	slots := make([]rawSlot, inflight)
	gen := uint32(1)
	active := 0
	send := func(i int) error {
		sl := &slots[i]
		gen++
		sl.seq = gen*uint32(inflight) + uint32(i)
		sl.got, sl.active = 0, true
		sl.t0 = time.Now()
		for o := 0; o < p.size || o == 0; o += chunk {
			k := copy(out[rawHdr:], req[o:min(p.size, o+chunk)])
			putHdr(out, sl.seq, o, p.size, p.resp, chunk)
			if err := c.sock.send(out[:rawHdr+k]); err != nil {
				return err
			}
		}
		return nil
	}
	finish := func(i int, err error) error {
		rec.done(m, slots[i].t0, err)
		if m.stopped() {
			slots[i].active = false
			active--
			return nil
		}
		return send(i)
	}
	for i := range slots {
		if err := send(i); err != nil {
			return err
		}
		active++
	}
	var set time.Time
	for active > 0 {
		now := time.Now()
		if now.Sub(set) > rawRTO/2 {
			set = now
		}
		n, err := c.sock.recv(in, set.Add(rawRTO))
		if errors.Is(err, errTimeout) {
			now = time.Now()
			for i := range slots {
				if slots[i].active && now.Sub(slots[i].t0) > rawRTO {
					if err := finish(i, errTimeout); err != nil {
						return err
					}
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		if n < rawHdr {
			continue
		}
		seq := binary.LittleEndian.Uint32(in[0:])
		i := int(seq % uint32(inflight))
		sl := &slots[i]
		if !sl.active || sl.seq != seq {
			continue // late, from a message already given up
		}
		sl.got += n - rawHdr
		if sl.got >= p.resp {
			if err := finish(i, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawInflight caps the messages in flight so their bytes fit the budget.
func rawInflight(p point) int {
	return min(p.conc, max(1, rawBudget/max(p.size, p.resp, 1)))
}
