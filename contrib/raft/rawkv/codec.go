package rawkv

import (
	"encoding/binary"
	"errors"
	"slices"
	"sort"

	"github.com/erpc-go/erpc/contrib/raft/internal/leader"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Op is a client operation.
type Op uint8

// Operations. A Get goes through the log like a Put, which makes it
// linearizable without leases or ReadIndex.
const (
	OpPut Op = iota + 1
	OpGet
)

// Methods the replicas serve.
const (
	MethodMsg = "rawkv.raft.msg" // a batch of raft messages; the reply is another batch
	MethodPut = "rawkv.kv.put"
	MethodGet = "rawkv.kv.get"
)

// Answer statuses, the first byte of every client response.
const (
	statusOK        = leader.StatusOK        // then found (1 byte) and the value
	statusNotLeader = leader.StatusNotLeader // then the leader's address, if known
	statusRetry     = leader.StatusRetry     // no answer this time (leadership changed, proposal dropped): try again
	statusStale     = leader.StatusOwn       // an older sequence number than the client's last applied one
)

var errCorrupt = errors.New("rawkv: corrupt message")

// command is one client operation, as it travels to the leader and through
// the log. (client, seq) names it across retries: a replica applies it once
// and answers retries from its session table.
type command struct {
	op     Op
	client uint64
	seq    uint64
	key    []byte
	value  []byte
}

func (c *command) appendTo(b []byte) []byte {
	b = append(b, byte(c.op))
	b = binary.AppendUvarint(b, c.client)
	b = binary.AppendUvarint(b, c.seq)
	b = binary.AppendUvarint(b, uint64(len(c.key)))
	b = append(b, c.key...)
	return append(b, c.value...)
}

// decode aliases b.
func (c *command) decode(b []byte) error {
	if len(b) < 1 || (Op(b[0]) != OpPut && Op(b[0]) != OpGet) {
		return errCorrupt
	}
	c.op, b = Op(b[0]), b[1:]
	var ok bool
	if c.client, b, ok = uvarint(b); !ok {
		return errCorrupt
	}
	if c.seq, b, ok = uvarint(b); !ok {
		return errCorrupt
	}
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b)) {
		return errCorrupt
	}
	c.key, c.value = b[:n], b[n:]
	return nil
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

// okResult is a successful answer.
func okResult(found bool, value []byte) []byte {
	b := make([]byte, 2, 2+len(value))
	b[0] = statusOK
	if found {
		b[1] = 1
	}
	return append(b, value...)
}

// appendMsg appends m to a batch: its length, then its protobuf encoding.
func appendMsg(b []byte, m *pb.Message) ([]byte, error) {
	n := proto.Size(m)
	b = binary.AppendUvarint(b, uint64(n))
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
}

// eachMsg decodes the messages of a batch (copying what they keep) and
// calls fn with each.
func eachMsg(b []byte, fn func(m *pb.Message)) error {
	for len(b) > 0 {
		n, rest, ok := uvarint(b)
		if !ok || n > uint64(len(rest)) {
			return errCorrupt
		}
		m := new(pb.Message)
		if err := proto.Unmarshal(rest[:n], m); err != nil {
			return err
		}
		fn(m)
		b = rest[n:]
	}
	return nil
}

// session is the last command a client had applied, and its answer.
type session struct {
	seq    uint64
	result []byte
}

// encodeState serializes the store and the session table for a snapshot,
// in key order so equal states encode equally.
func encodeState(kv map[string][]byte, sessions map[uint64]session) []byte {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := binary.AppendUvarint(nil, uint64(len(keys)))
	for _, k := range keys {
		b = appendBytes(b, []byte(k))
		b = appendBytes(b, kv[k])
	}
	ids := make([]uint64, 0, len(sessions))
	for id := range sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		s := sessions[id]
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, s.seq)
		b = appendBytes(b, s.result)
	}
	return b
}

func decodeState(b []byte) (map[string][]byte, map[uint64]session, error) {
	kv := make(map[string][]byte)
	sessions := make(map[uint64]session)
	if len(b) == 0 { // the bootstrap snapshot carries no data
		return kv, sessions, nil
	}
	n, b, ok := uvarint(b)
	for i := uint64(0); ok && i < n; i++ {
		var k, v []byte
		if k, b, ok = byteString(b); !ok {
			break
		}
		if v, b, ok = byteString(b); ok {
			kv[string(k)] = slices.Clone(v)
		}
	}
	if ok {
		n, b, ok = uvarint(b)
	}
	for i := uint64(0); ok && i < n; i++ {
		var id, seq uint64
		var res []byte
		if id, b, ok = uvarint(b); !ok {
			break
		}
		if seq, b, ok = uvarint(b); !ok {
			break
		}
		if res, b, ok = byteString(b); ok {
			sessions[id] = session{seq: seq, result: slices.Clone(res)}
		}
	}
	if !ok || len(b) != 0 {
		return nil, nil, errCorrupt
	}
	return kv, sessions, nil
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func byteString(b []byte) ([]byte, []byte, bool) {
	n, rest, ok := uvarint(b)
	if !ok || n > uint64(len(rest)) {
		return nil, b, false
	}
	return rest[:n], rest[n:], true
}
