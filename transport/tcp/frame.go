package tcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// preface is what each side writes first on a new connection, before any
// frame: a magic that no other protocol a port may speak starts with
// (HTTP/1 starts with a method or "HTTP/", HTTP/2 and so gRPC with "PRI *",
// TLS with 0x16), the version of this framing, and a newline, which makes
// an HTTP/1 server answer at once (400: not a request line) instead of
// waiting for the rest of a request. A side checks the peer's preface
// before it takes a frame, so a peer speaking something else (or a
// different version) is cut off on its first bytes.
//
// A dialer that listens writes a longer preface (a claim, identity.go):
// its last byte before the newline is kindClaim instead, followed by its
// listening port, a nonce and a newline; a check connection's preface is
// the same with kindCheck.
var preface = [prefaceLen]byte{'e', 'R', 'P', 'C', '/', 't', 'c', 'p', version, '\n'}

const (
	prefaceLen = 10
	version    = 1
	frameHead  = 4 // each frame: a big-endian uint32 length, then the datagram
)

// errMalformed is a frame length over the transport's MaxDatagram.
var errMalformed = errors.New("tcp: frame longer than MaxDatagram")

// errBadPreface is a peer whose first bytes are not the preface.
var errBadPreface = errors.New("tcp: peer does not speak erpc over TCP")

// checkPreface says why p, the peer's first prefaceLen bytes, is not our
// preface, or nil if it is.
func checkPreface(p []byte) error {
	if len(p) != prefaceLen {
		return fmt.Errorf("%w: %d-byte preface", errBadPreface, len(p))
	}
	if [prefaceLen]byte(p) == preface {
		return nil
	}
	if string(p[:prefaceLen-2]) == string(preface[:prefaceLen-2]) {
		return fmt.Errorf("%w: it speaks version %d of the framing, this side %d", errBadPreface, p[prefaceLen-2], version)
	}
	return fmt.Errorf("%w: its first bytes are %s", errBadPreface, strconv.Quote(string(p)))
}

// parseFrames calls fn with each complete frame's datagram at the start of
// buf, and returns how many bytes they took: the rest is the beginning of
// a frame still arriving. A length over max is errMalformed; what came
// before it was passed to fn.
func parseFrames(buf []byte, max int, fn func(datagram []byte)) (int, error) {
	off := 0
	for len(buf)-off >= frameHead {
		n := binary.BigEndian.Uint32(buf[off:])
		if uint64(n) > uint64(max) {
			return off, errMalformed
		}
		end := off + frameHead + int(n)
		if end > len(buf) {
			break
		}
		fn(buf[off+frameHead : end])
		off = end
	}
	return off, nil
}

// putHead writes the frame header of an n-byte datagram into b[:4].
func putHead(b []byte, n int) { binary.BigEndian.PutUint32(b, uint32(n)) }
