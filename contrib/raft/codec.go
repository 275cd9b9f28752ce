package raft

//lint:file-ignore SA1019 raft's deprecated Leader and Candidate fields are still carried: raft servers of older protocol versions read them

import (
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/hashicorp/raft"
)

// The wire encoding is hand-written rather than msgpack: every RPC is a flat
// sequence of uvarints, presence-prefixed byte strings and flag bytes, so
// encoding is a few appends into one buffer and decoding allocates only the
// structs raft keeps. Byte strings carry len+1 with 0 meaning nil, so nil and
// empty survive a round trip (raft compares neither, but reflect.DeepEqual in
// the tests does, and it keeps the codec honest about what it was given).
//
// Decoding aliases byte strings into the buffer it decodes: the server copies
// a request out of erpc's buffer once, then decodes from the copy, which it
// hands to raft for good (raft keeps Log.Data in its log store).

var errShort = errors.New("erpc/raft: truncated message")

// enc appends to a byte slice.
type enc struct{ b []byte }

func (e *enc) u64(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i64(v int64)  { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *enc) bytes(v []byte) {
	if v == nil {
		e.b = append(e.b, 0)
		return
	}
	e.u64(uint64(len(v)) + 1)
	e.b = append(e.b, v...)
}

// time encodes t as a presence flag plus Unix nanoseconds: the monotonic
// reading and the location are not carried (time.Unix(0, n) comes back).
func (e *enc) time(t time.Time) {
	if t.IsZero() {
		e.b = append(e.b, 0)
		return
	}
	e.b = append(e.b, 1)
	e.i64(t.UnixNano())
}

func (e *enc) header(h *raft.RPCHeader) {
	e.i64(int64(h.ProtocolVersion))
	e.bytes(h.ID)
	e.bytes(h.Addr)
}

// dec reads from a byte slice; the first error sticks and later reads
// return zero values, so a decoder checks err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() { d.err, d.b = errShort, nil }

func (d *dec) u64() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i64() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) byte1() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) bool() bool { return d.byte1() != 0 }

// bytes returns an alias into the buffer, capped so appends cannot spill.
func (d *dec) bytes() []byte {
	n := d.u64()
	if n == 0 || d.err != nil {
		return nil
	}
	n--
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) time() time.Time {
	if d.byte1() == 0 {
		return time.Time{}
	}
	return time.Unix(0, d.i64())
}

func (d *dec) header(h *raft.RPCHeader) {
	h.ProtocolVersion = raft.ProtocolVersion(d.i64())
	h.ID = d.bytes()
	h.Addr = d.bytes()
}

// count reads a slice length, bounded by the bytes left (every element
// takes at least one byte), so a corrupt length cannot allocate wildly.
func (d *dec) count() (n int, present bool) {
	v := d.u64()
	if v == 0 || d.err != nil {
		return 0, false
	}
	v--
	if v > uint64(len(d.b)) || v > math.MaxInt32 {
		d.fail()
		return 0, false
	}
	return int(v), true
}

func appendAppendEntriesRequest(b []byte, r *raft.AppendEntriesRequest) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.bytes(r.Leader)
	e.u64(r.PrevLogEntry)
	e.u64(r.PrevLogTerm)
	e.u64(r.LeaderCommitIndex)
	if r.Entries == nil {
		e.u64(0)
	} else {
		e.u64(uint64(len(r.Entries)) + 1)
	}
	for _, l := range r.Entries {
		if l == nil { // raft never sends one; keep the slot
			e.b = append(e.b, 0)
			continue
		}
		e.b = append(e.b, 1)
		e.u64(l.Index)
		e.u64(l.Term)
		e.b = append(e.b, byte(l.Type))
		e.bytes(l.Data)
		e.bytes(l.Extensions)
		e.time(l.AppendedAt)
	}
	return e.b
}

func decodeAppendEntriesRequest(b []byte, r *raft.AppendEntriesRequest) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.Leader = d.bytes()
	r.PrevLogEntry = d.u64()
	r.PrevLogTerm = d.u64()
	r.LeaderCommitIndex = d.u64()
	if n, ok := d.count(); ok {
		r.Entries = make([]*raft.Log, n)
		logs := make([]raft.Log, n) // one allocation for all entries
		for i := range n {
			if d.byte1() == 0 {
				continue
			}
			l := &logs[i]
			l.Index = d.u64()
			l.Term = d.u64()
			l.Type = raft.LogType(d.byte1())
			l.Data = d.bytes()
			l.Extensions = d.bytes()
			l.AppendedAt = d.time()
			r.Entries[i] = l
		}
	}
	return d.err
}

func appendAppendEntriesResponse(b []byte, r *raft.AppendEntriesResponse) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.u64(r.LastLog)
	e.bool(r.Success)
	e.bool(r.NoRetryBackoff)
	return e.b
}

func decodeAppendEntriesResponse(b []byte, r *raft.AppendEntriesResponse) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.LastLog = d.u64()
	r.Success = d.bool()
	r.NoRetryBackoff = d.bool()
	return d.err
}

func appendRequestVoteRequest(b []byte, r *raft.RequestVoteRequest) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.bytes(r.Candidate)
	e.u64(r.LastLogIndex)
	e.u64(r.LastLogTerm)
	e.bool(r.LeadershipTransfer)
	return e.b
}

func decodeRequestVoteRequest(b []byte, r *raft.RequestVoteRequest) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.Candidate = d.bytes()
	r.LastLogIndex = d.u64()
	r.LastLogTerm = d.u64()
	r.LeadershipTransfer = d.bool()
	return d.err
}

func appendRequestVoteResponse(b []byte, r *raft.RequestVoteResponse) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.bytes(r.Peers)
	e.bool(r.Granted)
	return e.b
}

func decodeRequestVoteResponse(b []byte, r *raft.RequestVoteResponse) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.Peers = d.bytes()
	r.Granted = d.bool()
	return d.err
}

func appendRequestPreVoteRequest(b []byte, r *raft.RequestPreVoteRequest) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.u64(r.LastLogIndex)
	e.u64(r.LastLogTerm)
	return e.b
}

func decodeRequestPreVoteRequest(b []byte, r *raft.RequestPreVoteRequest) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.LastLogIndex = d.u64()
	r.LastLogTerm = d.u64()
	return d.err
}

func appendRequestPreVoteResponse(b []byte, r *raft.RequestPreVoteResponse) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.bool(r.Granted)
	return e.b
}

func decodeRequestPreVoteResponse(b []byte, r *raft.RequestPreVoteResponse) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.Granted = d.bool()
	return d.err
}

func appendInstallSnapshotRequest(b []byte, r *raft.InstallSnapshotRequest) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.i64(int64(r.SnapshotVersion))
	e.u64(r.Term)
	e.bytes(r.Leader)
	e.u64(r.LastLogIndex)
	e.u64(r.LastLogTerm)
	e.bytes(r.Peers)
	e.bytes(r.Configuration)
	e.u64(r.ConfigurationIndex)
	e.i64(r.Size)
	return e.b
}

func decodeInstallSnapshotRequest(d *dec, r *raft.InstallSnapshotRequest) {
	d.header(&r.RPCHeader)
	r.SnapshotVersion = raft.SnapshotVersion(d.i64())
	r.Term = d.u64()
	r.Leader = d.bytes()
	r.LastLogIndex = d.u64()
	r.LastLogTerm = d.u64()
	r.Peers = d.bytes()
	r.Configuration = d.bytes()
	r.ConfigurationIndex = d.u64()
	r.Size = d.i64()
}

func appendInstallSnapshotResponse(b []byte, r *raft.InstallSnapshotResponse) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	e.u64(r.Term)
	e.bool(r.Success)
	return e.b
}

func decodeInstallSnapshotResponse(d *dec, r *raft.InstallSnapshotResponse) {
	d.header(&r.RPCHeader)
	r.Term = d.u64()
	r.Success = d.bool()
}

func appendTimeoutNowRequest(b []byte, r *raft.TimeoutNowRequest) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	return e.b
}

func decodeTimeoutNowRequest(b []byte, r *raft.TimeoutNowRequest) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	return d.err
}

func appendTimeoutNowResponse(b []byte, r *raft.TimeoutNowResponse) []byte {
	e := enc{b}
	e.header(&r.RPCHeader)
	return e.b
}

func decodeTimeoutNowResponse(b []byte, r *raft.TimeoutNowResponse) error {
	d := dec{b: b}
	d.header(&r.RPCHeader)
	return d.err
}
