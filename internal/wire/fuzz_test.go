package wire

import (
	"bytes"
	"testing"
)

// FuzzHeaderParse checks that any byte string either fails to parse or parses
// into a header that re-encodes to the same bytes.
func FuzzHeaderParse(f *testing.F) {
	for typ := TypeReq; typ < typeEnd; typ++ {
		h := sampleHeader()
		h.Type = typ
		lo, _ := typ.payloadRule()
		f.Add(append(AppendHeader(nil, &h), make([]byte, lo)...))
	}
	f.Add([]byte{})
	f.Add([]byte{Magic, Version})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		var h Header
		payload, err := h.Parse(pkt)
		if err != nil {
			return
		}
		if len(payload) != len(pkt)-HeaderLen {
			t.Fatalf("payload length %d for packet length %d", len(payload), len(pkt))
		}
		re := AppendHeader(nil, &h)
		if !bytes.Equal(re, pkt[:HeaderLen]) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", re, pkt[:HeaderLen])
		}
	})
}

// FuzzConnectParse checks the connect payload parser the same way.
func FuzzConnectParse(f *testing.F) {
	var b [ConnectLen]byte
	(&Connect{Session: 1, Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: 1432, Token: 0xabcdef}).Put(b[:])
	f.Add(b[:])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		var c Connect
		if err := c.Parse(p); err != nil {
			return
		}
		var re [ConnectLen]byte
		c.Put(re[:])
		// Everything but the reserved bytes round-trips.
		if !bytes.Equal(re[:14], p[:14]) || !bytes.Equal(re[16:20], p[16:20]) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", re, p)
		}
	})
}
