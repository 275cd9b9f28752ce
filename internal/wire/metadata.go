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
// cannot make a server parse or keep more than this per request. It bounds
// a response's metadata too: its two blocks together (see
// ParseResponseMetadata).
const MaxMetadata = 16 << 10

// Errors of the metadata parsers: a block that does not parse, and one
// that parses but is over MaxMetadata.
var (
	ErrMetadata         = errors.New("wire: malformed metadata block")
	ErrMetadataTooLarge = errors.New("wire: metadata block over MaxMetadata")
)

// BlockSize is the length of the block AppendMetadata writes for keys of
// md, its length field included.
func BlockSize(keys []string, md map[string][]string) int {
	n := bodySize(keys, md)
	return uvarintLen(uint64(n)) + n
}

func bodySize(keys []string, md map[string][]string) int {
	n := uvarintLen(uint64(len(keys)))
	for _, k := range keys {
		vs := md[k]
		n += uvarintLen(uint64(len(k))) + len(k) + uvarintLen(uint64(len(vs)))
		for _, v := range vs {
			n += uvarintLen(uint64(len(v))) + len(v)
		}
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// AppendMetadata appends the block for md to b. Keys are written in the
// order given by keys (callers sort them for a stable encoding). It
// allocates only if b has no room for the block.
func AppendMetadata(b []byte, keys []string, md map[string][]string) []byte {
	b = binary.AppendUvarint(b, uint64(bodySize(keys, md)))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		vs := md[k]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return b
}

// ParseMetadata splits msg into its metadata block and the rest, calling
// kv for each key's values (keys may repeat only if the sender repeated
// them). It rejects anything malformed (ErrMetadata) and blocks over
// MaxMetadata (ErrMetadataTooLarge).
func ParseMetadata(msg []byte, kv func(key string, values []string)) (rest []byte, err error) {
	n, l := binary.Uvarint(msg)
	if l <= 0 || n > uint64(len(msg)-l) {
		return nil, ErrMetadata
	}
	if n+uint64(l) > MaxMetadata {
		return nil, ErrMetadataTooLarge
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
