package kvstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"sync"

	"github.com/hashicorp/raft"
)

// Op is a KV operation.
type Op uint8

// Operations. Get goes through the log like the others, which is what makes
// it linearizable without a leader lease.
const (
	OpPut Op = iota + 1
	OpGet
	OpAppend
)

// Command is one client operation, as it travels to the replica and through
// the raft log. (Client, Seq) identifies it across retries: the FSM applies
// a command once and answers its retries from the session table.
type Command struct {
	Op     Op
	Client uint64
	Seq    uint64
	Key    []byte
	Value  []byte
}

// Result is what applying a command returned.
type Result struct {
	Found bool
	Value []byte // Get and Append: the value after the operation
}

var errCorrupt = errors.New("kvstore: corrupt command")

func (c *Command) appendTo(b []byte) []byte {
	b = append(b, byte(c.Op))
	b = binary.AppendUvarint(b, c.Client)
	b = binary.AppendUvarint(b, c.Seq)
	b = binary.AppendUvarint(b, uint64(len(c.Key)))
	b = append(b, c.Key...)
	b = binary.AppendUvarint(b, uint64(len(c.Value)))
	return append(b, c.Value...)
}

// decode aliases b.
func (c *Command) decode(b []byte) error {
	if len(b) < 1 {
		return errCorrupt
	}
	c.Op, b = Op(b[0]), b[1:]
	var ok bool
	if c.Client, b, ok = uvarint(b); !ok {
		return errCorrupt
	}
	if c.Seq, b, ok = uvarint(b); !ok {
		return errCorrupt
	}
	if c.Key, b, ok = byteString(b); !ok {
		return errCorrupt
	}
	if c.Value, _, ok = byteString(b); !ok {
		return errCorrupt
	}
	if c.Op < OpPut || c.Op > OpAppend {
		return errCorrupt
	}
	return nil
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

func byteString(b []byte) ([]byte, []byte, bool) {
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b)) {
		return nil, nil, false
	}
	return b[:n:n], b[n:], true
}

// session remembers a client's last command and its result, for retries.
type session struct {
	seq uint64
	res Result
}

// FSM is the replicated state: the map, plus the client session table that
// deduplicates retries (it is part of the state, so it is in snapshots).
type FSM struct {
	mu       sync.RWMutex
	data     map[string][]byte
	sessions map[uint64]session
}

// NewFSM returns an empty store.
func NewFSM() *FSM {
	return &FSM{data: make(map[string][]byte), sessions: make(map[uint64]session)}
}

// errDuplicate is the result of a command older than its client's last: the
// client gave up on it long ago, so nobody waits for the answer.
var errDuplicate = errors.New("kvstore: duplicate of an older command")

// Apply applies one committed entry.
func (f *FSM) Apply(l *raft.Log) any {
	var c Command
	if err := c.decode(l.Data); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Client != 0 {
		if s, ok := f.sessions[c.Client]; ok && c.Seq <= s.seq {
			if c.Seq == s.seq {
				return s.res
			}
			return errDuplicate
		}
	}
	var res Result
	k := string(c.Key)
	switch c.Op {
	case OpPut:
		f.data[k] = append([]byte(nil), c.Value...)
		res.Found = true
	case OpGet:
		v, ok := f.data[k]
		res = Result{Found: ok, Value: v} // values are never modified in place
	case OpAppend:
		old := f.data[k]
		v := make([]byte, 0, len(old)+len(c.Value))
		v = append(append(v, old...), c.Value...)
		f.data[k] = v
		res = Result{Found: true, Value: v}
	}
	if c.Client != 0 {
		f.sessions[c.Client] = session{seq: c.Seq, res: res}
	}
	return res
}

// Read returns the local value of key, bypassing the log: only the
// deliberately stale variant uses it.
func (f *FSM) Read(key []byte) ([]byte, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.data[string(key)]
	return v, ok
}

// Len is the number of keys.
func (f *FSM) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.data)
}

// Equal reports whether two stores hold the same data.
func (f *FSM) Equal(g *FSM) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return maps.EqualFunc(f.data, g.data, func(a, b []byte) bool { return string(a) == string(b) })
}

// Snapshot captures the state; values are immutable, so shallow copies do.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &snapshot{data: maps.Clone(f.data), sessions: maps.Clone(f.sessions)}, nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReader(rc)
	data := make(map[string][]byte)
	sessions := make(map[uint64]session)
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	for range n {
		k, err := readBytes(r)
		if err != nil {
			return err
		}
		v, err := readBytes(r)
		if err != nil {
			return err
		}
		data[string(k)] = v
	}
	if n, err = binary.ReadUvarint(r); err != nil {
		return err
	}
	for range n {
		var s session
		id, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		if s.seq, err = binary.ReadUvarint(r); err != nil {
			return err
		}
		found, err := r.ReadByte()
		if err != nil {
			return err
		}
		s.res.Found = found != 0
		if s.res.Value, err = readBytes(r); err != nil {
			return err
		}
		sessions[id] = s
	}
	f.mu.Lock()
	f.data, f.sessions = data, sessions
	f.mu.Unlock()
	return nil
}

func readBytes(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > 1<<30 {
		return nil, errCorrupt
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r, b)
	return b, err
}

type snapshot struct {
	data     map[string][]byte
	sessions map[uint64]session
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	w := bufio.NewWriter(sink)
	var b []byte
	b = binary.AppendUvarint(b[:0], uint64(len(s.data)))
	w.Write(b)
	for k, v := range s.data {
		b = binary.AppendUvarint(b[:0], uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(v)))
		w.Write(b)
		w.Write(v)
	}
	b = binary.AppendUvarint(b[:0], uint64(len(s.sessions)))
	w.Write(b)
	for id, ss := range s.sessions {
		b = binary.AppendUvarint(b[:0], id)
		b = binary.AppendUvarint(b, ss.seq)
		found := byte(0)
		if ss.res.Found {
			found = 1
		}
		b = append(b, found)
		b = binary.AppendUvarint(b, uint64(len(ss.res.Value)))
		w.Write(b)
		w.Write(ss.res.Value)
	}
	if err := w.Flush(); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {}

// Encode returns the log entry for c, for callers that Apply directly.
func Encode(c *Command) []byte { return c.appendTo(nil) }
