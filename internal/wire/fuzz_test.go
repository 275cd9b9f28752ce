package wire

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzHeaderParse checks that any byte string either fails to parse or parses
// into a header that re-encodes to the same bytes.
func FuzzHeaderParse(f *testing.F) {
	for typ := TypeReq; typ < typeEnd; typ++ {
		h := sampleHeader()
		h.Type = typ
		lo, hi := typ.payloadRule()
		f.Add(append(AppendHeader(nil, &h), make([]byte, lo)...))
		if hi != lo && hi <= ConnectLen+CookieLen { // a connect with a cookie
			f.Add(append(AppendHeader(nil, &h), make([]byte, hi)...))
		}
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

// FuzzConnectParse checks the connect payload parser the same way, with
// and without a retry cookie: a cookie is there exactly when the payload
// has room for it, and comes back byte for byte.
func FuzzConnectParse(f *testing.F) {
	var b [ConnectLen + CookieLen]byte
	(&Connect{Session: 1, Window: 8, Credits: 32, MaxMsgSize: 8 << 20, MaxData: 1432, Token: 0xabcdef}).Put(b[:])
	f.Add(b[:ConnectLen])
	copy(b[ConnectLen:], "cookie!!")
	f.Add(b[:])
	f.Add(b[:ConnectLen+CookieLen-1])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		var c Connect
		if err := c.Parse(p); err != nil {
			return
		}
		if c.Len() != len(p) || c.HasCookie != (len(p) == ConnectLen+CookieLen) {
			t.Fatalf("a %d-byte payload parsed as %d bytes (cookie %v)", len(p), c.Len(), c.HasCookie)
		}
		re := make([]byte, c.Len())
		c.Put(re)
		copy(re[ConnectLen:], c.Cookie[:])
		// Everything but the reserved bytes round-trips.
		if !bytes.Equal(re[:14], p[:14]) || !bytes.Equal(re[16:20], p[16:20]) || !bytes.Equal(re[ConnectLen:], p[ConnectLen:]) {
			t.Fatalf("re-encoding differs:\n got % x\nwant % x", re, p)
		}
	})
}

// FuzzParseMetadata: a metadata block from any peer either fails to parse
// or parses into pairs that survive a re-encoding unchanged (varints need
// not be minimal on the wire, so the bytes may differ), and never into more
// than MaxMetadata bytes of block.
func FuzzParseMetadata(f *testing.F) {
	md := map[string][]string{"traceparent": {"00-abc-def-01"}, "k": {"1", "2"}, "empty": nil}
	f.Add(append(AppendMetadata(nil, []string{"empty", "k", "traceparent"}, md), "payload"...))
	f.Add([]byte{0})
	f.Add([]byte{3, 1, 1})
	parse := func(msg []byte) ([]string, map[string][]string, []byte, error) {
		var keys []string
		got := map[string][]string{}
		rest, err := ParseMetadata(msg, func(k string, v []string) {
			if _, ok := got[k]; !ok {
				keys = append(keys, k)
			}
			got[k] = append(got[k], v...)
		})
		return keys, got, rest, err
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		keys, got, rest, err := parse(msg)
		if err != nil {
			return
		}
		if len(msg)-len(rest) > MaxMetadata {
			t.Fatalf("parsed a %d-byte block, over the bound", len(msg)-len(rest))
		}
		re := append(AppendMetadata(nil, keys, got), rest...)
		keys2, got2, rest2, err := parse(re)
		if err != nil || string(rest2) != string(rest) || len(keys2) != len(keys) {
			t.Fatalf("re-encoded block does not parse back: %v", err)
		}
		for _, k := range keys {
			if strings.Join(got[k], "\x00") != strings.Join(got2[k], "\x00") || len(got[k]) != len(got2[k]) {
				t.Fatalf("key %q: %q then %q", k, got[k], got2[k])
			}
		}
	})
}
