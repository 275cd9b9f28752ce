package wire

import (
	"encoding/binary"
	"errors"
)

// A metadata block precedes a request's own bytes when the request's
// packets carry FlagMetadata:
//
//	uvarint  block length (the bytes after this length)
//	uvarint  number of keys
//	per key: uvarint length, key bytes, uvarint number of values,
//	         per value: uvarint length, value bytes
//
// Keys and values are opaque bytes here (the API layer keeps keys in lower
// case, as gRPC does).

// MaxMetadata bounds a metadata block (its length field included): a peer
// cannot make a server parse or keep more than this per request.
const MaxMetadata = 16 << 10

// ErrMetadata reports a malformed or oversized metadata block.
var ErrMetadata = errors.New("wire: malformed metadata block")

// AppendMetadata appends the block for md to b. Keys are written in the
// order given by keys (callers sort them for a stable encoding).
func AppendMetadata(b []byte, keys []string, md map[string][]string) []byte {
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(keys)))
	for _, k := range keys {
		body = binary.AppendUvarint(body, uint64(len(k)))
		body = append(body, k...)
		vs := md[k]
		body = binary.AppendUvarint(body, uint64(len(vs)))
		for _, v := range vs {
			body = binary.AppendUvarint(body, uint64(len(v)))
			body = append(body, v...)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// ParseMetadata splits msg into its metadata block and the rest, calling
// kv for each key's values (keys may repeat only if the sender repeated
// them). It rejects blocks over MaxMetadata and anything malformed.
func ParseMetadata(msg []byte, kv func(key string, values []string)) (rest []byte, err error) {
	n, l := binary.Uvarint(msg)
	if l <= 0 || n > uint64(len(msg)-l) || n+uint64(l) > MaxMetadata {
		return nil, ErrMetadata
	}
	body, rest := msg[l:l+int(n)], msg[l+int(n):]
	keys, body, ok := uvarint(body)
	if !ok || keys > uint64(len(body)) {
		return nil, ErrMetadata
	}
	for range keys {
		var key []byte
		var nv uint64
		if key, body, ok = bytesField(body); !ok {
			return nil, ErrMetadata
		}
		if nv, body, ok = uvarint(body); !ok || nv > uint64(len(body))+1 {
			return nil, ErrMetadata
		}
		vals := make([]string, 0, nv)
		for range nv {
			var v []byte
			if v, body, ok = bytesField(body); !ok {
				return nil, ErrMetadata
			}
			vals = append(vals, string(v))
		}
		kv(string(key), vals)
	}
	if len(body) != 0 {
		return nil, ErrMetadata
	}
	return rest, nil
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, l := binary.Uvarint(b)
	if l <= 0 {
		return 0, nil, false
	}
	return v, b[l:], true
}

func bytesField(b []byte) (field, rest []byte, ok bool) {
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b)) {
		return nil, nil, false
	}
	return b[:n], b[n:], true
}
