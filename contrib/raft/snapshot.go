package raft

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/hashicorp/raft"
)

// InstallSnapshot streams a snapshot as a sequence of chunk calls on the
// peer's snapshot session, one at a time:
//
//	uvarint stream id | flags (first, last) | [request, first chunk only] | data
//
// The server starts raft's InstallSnapshot RPC on the first chunk, with a
// reader that yields the chunks' data in place (no copy: a chunk is
// answered only once raft has read it, which is also the flow control).
// Each chunk is answered with 0 (send the next) or, once raft has answered
// the RPC, 1 + the encoded response; raft may answer before reading
// everything (a stale term), and the client then stops early. The whole
// transfer gets Timeout * (1 + Size/SnapshotBytesPerTimeout); the server
// waits at most Timeout for each next chunk.

const (
	flagFirst = 1 << 0
	flagLast  = 1 << 1

	replyNext  = 0
	replyFinal = 1
)

var errSnapshotStream = errors.New("erpc/raft: snapshot stream ended")

// InstallSnapshot sends args and args.Size bytes of data to target.
func (t *Transport) InstallSnapshot(_ raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if t.closed() {
		return ErrTransportShutdown
	}
	if t.cfg.Drop != nil && t.cfg.Drop(target) {
		return ErrDropped
	}
	if args.Size < 0 {
		return fmt.Errorf("erpc/raft: snapshot size %d", args.Size)
	}
	p, err := t.peer(target)
	if err != nil {
		return err
	}
	timeout := t.cfg.Timeout * time.Duration(1+args.Size/t.cfg.SnapshotBytesPerTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := p.session(ctx, kindSnapshot)
	if err != nil {
		return err
	}
	id := rand.Uint64()
	chunk := int64(t.cfg.SnapshotChunkSize)
	var reply []byte
	for remaining, first := args.Size, true; ; first = false {
		n := min(chunk, remaining)
		remaining -= n
		var flags byte
		if first {
			flags |= flagFirst
		}
		if remaining == 0 {
			flags |= flagLast
		}
		hdr := binary.AppendUvarint(make([]byte, 0, 64), id)
		hdr = append(hdr, flags)
		if first {
			hdr = appendInstallSnapshotRequest(hdr, args)
		}
		h := len(hdr)
		b := make([]byte, h+int(n))
		copy(b, hdr)
		if _, err := io.ReadFull(data, b[h:]); err != nil {
			return fmt.Errorf("erpc/raft: reading snapshot: %w", err)
		}
		reply, err = s.Call(ctx, methodSnapshot, b, nil)
		if err != nil {
			return err
		}
		if len(reply) == 0 {
			return errSnapshotStream
		}
		if reply[0] == replyFinal {
			d := dec{b: reply[1:]}
			decodeInstallSnapshotResponse(&d, resp)
			return d.err
		}
		if flags&flagLast != 0 {
			return errSnapshotStream // the last chunk must get the final answer
		}
	}
}

// chunk is one received chunk, its data still in erpc's buffer.
type chunk struct {
	req  erpc.Request // the zero Request: no chunk
	data []byte
	last bool
}

// snapStream is the io.Reader raft reads a snapshot from.
type snapStream struct {
	t      *Transport
	id     uint64
	chunks chan chunk

	mu       sync.Mutex
	cur      chunk        // being read
	held     erpc.Request // the last chunk, read, owed the final answer (zero: none)
	eof      bool         // the last chunk was read
	finished bool         // raft answered; final holds the answer
	final    raft.RPCResponse
}

func (t *Transport) serveSnapshot(r erpc.Request) {
	if !t.ready(r) {
		return
	}
	d := dec{b: r.Data()}
	id := d.u64()
	flags := d.byte1()
	if d.err != nil {
		badRequest(r, d.err)
		return
	}
	if flags&flagFirst != 0 {
		cmd := new(raft.InstallSnapshotRequest)
		decodeInstallSnapshotRequest(&d, cmd)
		if d.err != nil {
			badRequest(r, d.err)
			return
		}
		// raft may keep the request's byte strings; the data it only reads.
		cmd.ID, cmd.Addr = bytes.Clone(cmd.ID), bytes.Clone(cmd.Addr)
		cmd.Leader, cmd.Peers = bytes.Clone(cmd.Leader), bytes.Clone(cmd.Peers)
		cmd.Configuration = bytes.Clone(cmd.Configuration)
		data := d.b
		st := &snapStream{t: t, id: id, chunks: make(chan chunk, 4)}
		t.streamsMu.Lock()
		t.streams[id] = st
		t.streamsMu.Unlock()
		if !t.dispatch(erpc.Request{}, cmd, st) {
			t.dropStream(id)
			r.RespondError(errFull)
			return
		}
		st.deliver(chunk{req: r, data: data, last: flags&flagLast != 0})
		return
	}
	t.streamsMu.Lock()
	st := t.streams[id]
	t.streamsMu.Unlock()
	if st == nil {
		r.RespondError(erpc.Errorf(erpc.NotFound, "erpc/raft: no snapshot stream %#x", id))
		return
	}
	st.deliver(chunk{req: r, data: d.b, last: flags&flagLast != 0})
}

func (t *Transport) dropStream(id uint64) {
	t.streamsMu.Lock()
	delete(t.streams, id)
	t.streamsMu.Unlock()
}

// deliver queues a chunk for the reader, or answers it at once if raft
// already answered the RPC.
func (s *snapStream) deliver(c chunk) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		s.answerFinal(c.req)
		return
	}
	select {
	case s.chunks <- c:
	default: // the client sends one chunk at a time; this is a bad client
		c.req.RespondError(errFull)
	}
}

// Read yields the chunks' data in order, then io.EOF after the last one.
func (s *snapStream) Read(p []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if s.finished {
			s.mu.Unlock()
			return 0, errSnapshotStream
		}
		if s.cur.req != (erpc.Request{}) {
			n := copy(p, s.cur.data)
			s.cur.data = s.cur.data[n:]
			if len(s.cur.data) == 0 {
				if s.cur.last {
					s.held, s.eof = s.cur.req, true
				} else {
					s.cur.req.Respond([]byte{replyNext})
				}
				s.cur = chunk{}
			}
			s.mu.Unlock()
			return n, nil
		}
		if s.eof {
			s.mu.Unlock()
			return 0, io.EOF
		}
		s.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(s.t.cfg.Timeout)
		}
		select {
		case c := <-s.chunks:
			s.mu.Lock()
			s.cur = c
			s.mu.Unlock()
		case <-timer.C:
			return 0, fmt.Errorf("erpc/raft: no snapshot chunk for %v", s.t.cfg.Timeout)
		case <-s.t.shutdown:
			return 0, ErrTransportShutdown
		}
	}
}

// finish records raft's answer and gives it to every chunk still owed one.
func (s *snapStream) finish(resp raft.RPCResponse) {
	s.t.dropStream(s.id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished, s.final = true, resp
	if s.held != (erpc.Request{}) {
		s.answerFinal(s.held)
		s.held = erpc.Request{}
	}
	if s.cur.req != (erpc.Request{}) {
		s.answerFinal(s.cur.req)
		s.cur = chunk{}
	}
	for {
		select {
		case c := <-s.chunks:
			s.answerFinal(c.req)
		default:
			return
		}
	}
}

// answerFinal answers r with raft's response; s.mu is held.
func (s *snapStream) answerFinal(r erpc.Request) {
	if s.final.Error != nil {
		r.RespondError(erpc.Errorf(erpc.Unknown, "%s", s.final.Error.Error()))
		return
	}
	v, ok := s.final.Response.(*raft.InstallSnapshotResponse)
	if !ok {
		r.RespondError(erpc.Errorf(erpc.Internal, "erpc/raft: unexpected response type %T", s.final.Response))
		return
	}
	r.Respond(appendInstallSnapshotResponse([]byte{replyFinal}, v))
}
