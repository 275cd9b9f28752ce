package stream

import (
	"encoding/binary"
	"errors"
)

// Kind is a frame's type.
type Kind uint8

// Frame kinds (see the package doc for their fields).
const (
	KindData   Kind = 1
	KindClose  Kind = 2
	KindCancel Kind = 3
	KindGrant  Kind = 4
	KindHeader Kind = 5
	KindEnd    Kind = 6
)

// Frame is one parsed frame. Data, Status and Meta point into the batch.
type Frame struct {
	Kind      Kind
	Stream    uint64
	Seq       uint64 // Data: the message's number; Close, End: the final count
	MsgLimit  uint64 // Grant
	ByteLimit uint64 // Grant
	Code      uint8  // Cancel, End
	Data      []byte // Data: the message; End: the status payload
	Meta      []byte // Header, End: the metadata block (may be empty)
}

// ErrMalformed reports a batch that does not parse.
var ErrMalformed = errors.New("stream: malformed frame")

// Reader iterates over the frames of a batch without allocating.
type Reader struct {
	b   []byte
	err error
}

// Reset makes r read batch b.
func (r *Reader) Reset(b []byte) { r.b, r.err = b, nil }

// Err is the reason Next stopped, nil at a clean end.
func (r *Reader) Err() error { return r.err }

// Rest is what Next has not read yet.
func (r *Reader) Rest() []byte { return r.b }

// Next parses the next frame into f; false at the end or on an error.
func (r *Reader) Next(f *Frame) bool {
	if len(r.b) == 0 || r.err != nil {
		return false
	}
	*f = Frame{Kind: Kind(r.b[0])}
	b := r.b[1:]
	var ok bool
	if f.Stream, b, ok = uvarint(b); !ok {
		return r.fail()
	}
	switch f.Kind {
	case KindData:
		if f.Seq, b, ok = uvarint(b); ok {
			f.Data, b, ok = bytesField(b)
		}
	case KindClose:
		f.Seq, b, ok = uvarint(b)
	case KindCancel:
		f.Code, b, ok = byteField(b)
	case KindGrant:
		if f.MsgLimit, b, ok = uvarint(b); ok {
			f.ByteLimit, b, ok = uvarint(b)
		}
	case KindHeader:
		f.Meta, b, ok = bytesField(b)
	case KindEnd:
		if f.Seq, b, ok = uvarint(b); ok {
			if f.Code, b, ok = byteField(b); ok {
				if f.Data, b, ok = bytesField(b); ok {
					f.Meta, b, ok = bytesField(b)
				}
			}
		}
	default:
		ok = false
	}
	if !ok {
		return r.fail()
	}
	r.b = b
	return true
}

func (r *Reader) fail() bool {
	r.err, r.b = ErrMalformed, nil
	return false
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

func byteField(b []byte) (uint8, []byte, bool) {
	if len(b) == 0 {
		return 0, nil, false
	}
	return b[0], b[1:], true
}

func bytesField(b []byte) ([]byte, []byte, bool) {
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b)) {
		return nil, nil, false
	}
	return b[:n:n], b[n:], true
}

func head(b []byte, k Kind, id uint64) []byte {
	b = append(b, byte(k))
	return binary.AppendUvarint(b, id)
}

// AppendData appends a Data frame.
func AppendData(b []byte, id, seq uint64, msg []byte) []byte {
	b = binary.AppendUvarint(head(b, KindData, id), seq)
	b = binary.AppendUvarint(b, uint64(len(msg)))
	return append(b, msg...)
}

// AppendClose appends a Close frame.
func AppendClose(b []byte, id, final uint64) []byte {
	return binary.AppendUvarint(head(b, KindClose, id), final)
}

// AppendCancel appends a Cancel frame.
func AppendCancel(b []byte, id uint64, code uint8) []byte {
	return append(head(b, KindCancel, id), code)
}

// AppendGrant appends a Grant frame.
func AppendGrant(b []byte, id, msgLimit, byteLimit uint64) []byte {
	b = binary.AppendUvarint(head(b, KindGrant, id), msgLimit)
	return binary.AppendUvarint(b, byteLimit)
}

// AppendHeader appends a Header frame carrying a metadata block.
func AppendHeader(b []byte, id uint64, block []byte) []byte {
	b = binary.AppendUvarint(head(b, KindHeader, id), uint64(len(block)))
	return append(b, block...)
}

// AppendEnd appends an End frame.
func AppendEnd(b []byte, id, final uint64, code uint8, status, block []byte) []byte {
	b = binary.AppendUvarint(head(b, KindEnd, id), final)
	b = append(b, code)
	b = binary.AppendUvarint(b, uint64(len(status)))
	b = append(b, status...)
	b = binary.AppendUvarint(b, uint64(len(block)))
	return append(b, block...)
}

// DataOverhead is the most a Data frame adds to its message.
const DataOverhead = 1 + 3*binary.MaxVarintLen64

// Cut returns the length of the longest prefix of the batch b made of
// whole frames that is at most max long; if atLeastOne, the first frame
// whatever its length. It assumes b is well formed (its own output).
func Cut(b []byte, max int, atLeastOne bool) int {
	var r Reader
	r.Reset(b)
	var f Frame
	end := 0
	for r.Next(&f) {
		next := len(b) - len(r.Rest())
		if next > max && (end > 0 || !atLeastOne) {
			break
		}
		end = next
	}
	return end
}
