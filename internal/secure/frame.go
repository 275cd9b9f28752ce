package secure

import (
	"encoding/binary"
	"errors"

	"github.com/erpc-go/erpc/internal/seal"
)

const (
	frameCrypto = 1
	frameClose  = 2

	frameHeaderLen = 15
	// minInitial is the size a client pads its Initial datagrams to
	// (QUIC's 1200): the server's first flight, larger than the client's,
	// then answers at most a few times what a forged source costs.
	minInitial = 1200
)

var errFrame = errors.New("secure: malformed handshake frame")

// frame is one handshake packet's content.
type frame struct {
	kind   uint8
	srcID  uint64
	offset uint32
	data   []byte
}

func (f *frame) parse(b []byte) error {
	if len(b) < frameHeaderLen {
		return errFrame
	}
	f.kind = b[0]
	f.srcID = binary.LittleEndian.Uint64(b[1:])
	f.offset = binary.LittleEndian.Uint32(b[9:])
	n := int(binary.LittleEndian.Uint16(b[13:]))
	if (f.kind != frameCrypto && f.kind != frameClose) || f.srcID == 0 || n > len(b)-frameHeaderLen {
		return errFrame
	}
	f.data = b[frameHeaderLen : frameHeaderLen+n]
	return nil
}

// appendFrame appends a frame, padded with zeros to pad bytes in all.
func appendFrame(b []byte, f *frame, pad int) []byte {
	start := len(b)
	b = append(b, f.kind)
	b = binary.LittleEndian.AppendUint64(b, f.srcID)
	b = binary.LittleEndian.AppendUint32(b, f.offset)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(f.data)))
	b = append(b, f.data...)
	for len(b)-start < pad {
		b = append(b, 0)
	}
	return b
}

// stream reassembles one level's crypto data in order.
type stream struct {
	next    uint32            // offset of the next byte crypto/tls wants
	pending map[uint32][]byte // frames received ahead of next, by offset
}

// maxPending bounds the bytes a peer may park ahead of the stream.
const maxPending = 64 << 10

// add takes a frame's data; it returns the in-order bytes now ready, and
// whether the frame was wholly a copy of data already consumed.
func (s *stream) add(off uint32, data []byte) (ready []byte, dup bool) {
	end := off + uint32(len(data))
	if end <= s.next {
		return nil, true
	}
	if off > s.next {
		if off-s.next+uint32(len(data)) > maxPending {
			return nil, false
		}
		if s.pending == nil {
			s.pending = make(map[uint32][]byte)
		}
		if _, ok := s.pending[off]; !ok {
			s.pending[off] = append([]byte(nil), data...)
		}
		return nil, false
	}
	ready = append(ready, data[s.next-off:]...)
	s.next = end
	for {
		d, ok := s.take()
		if !ok {
			return ready, false
		}
		ready = append(ready, d...)
	}
}

// take removes a pending frame that starts at or before next and reaches
// past it, returning its new bytes.
func (s *stream) take() ([]byte, bool) {
	for off, d := range s.pending {
		end := off + uint32(len(d))
		switch {
		case end <= s.next:
			delete(s.pending, off)
		case off <= s.next:
			delete(s.pending, off)
			out := d[s.next-off:]
			s.next = end
			return out, true
		}
	}
	return nil, false
}

// ErrNotFirstInitial is CheckFirstInitial's answer to a packet that opens
// but is not the start of a ClientHello, or a datagram too short to be a
// client's first Initial.
var ErrNotFirstInitial = errors.New("secure: not a client's first Initial")

// MinFirstInitial is the size a client's Initial datagrams are padded to
// on a transport whose datagrams carry at most maxDatagram bytes.
func MinFirstInitial(maxDatagram int) int { return min(minInitial, maxDatagram) }

// CheckFirstInitial reports whether pkt, a whole datagram at the Initial
// level for an ID the server does not know, is a client's first Initial:
// padded to MinFirstInitial, opening under the Initial keys its
// destination ID derives, and carrying the first bytes of a ClientHello.
// A server creates state for nothing else, so garbage costs it a key
// derivation and no association. Errors: ErrNotFirstInitial, or the
// seal error the packet failed to open with.
func CheckFirstInitial(pkt []byte, maxDatagram int) error {
	if len(pkt) < MinFirstInitial(maxDatagram) {
		return ErrNotFirstInitial
	}
	h, err := seal.ParseHeader(pkt)
	if err != nil {
		return err
	}
	if h.Level != seal.LevelInitial {
		return ErrNotFirstInitial
	}
	c, _ := seal.InitialSecrets(h.DestID)
	o, err := seal.NewOpener(seal.InitialSuite, c, seal.LevelInitial)
	if err != nil {
		return err
	}
	plain, err := o.Open(nil, pkt)
	if err != nil {
		return err
	}
	var f frame
	const clientHello = 1 // the TLS handshake message type
	if f.parse(plain) != nil || f.kind != frameCrypto || f.offset != 0 || len(f.data) < 4 || f.data[0] != clientHello {
		return ErrNotFirstInitial
	}
	return nil
}
