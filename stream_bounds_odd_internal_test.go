package erpc

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEndFittingOddMessages (r): the cut of a status message too long
// for the session's limit keeps the code and gives the client a prefix
// of the handler's message whatever bytes it holds: one that starts
// with a NUL byte (which the status payload's encoding uses as its
// marker, so such a message travels in the structured form), one with
// details, and bytes that are not UTF-8. The frame fits the limit.
func TestEndFittingOddMessages(t *testing.T) {
	pieces := []string{"e", "é", "\x00", "\x80", "\xff", "🙂"}
	st := &serverStream{hd: &streamHandler{name: "S"}}
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 5))
		st.maxMsg = 64 + rng.IntN(2048)
		var sb strings.Builder
		if seed%2 == 0 {
			sb.WriteByte(0) // a leading NUL
		}
		for sb.Len() < st.maxMsg+rng.IntN(3*st.maxMsg) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		msg := sb.String()
		e := &Error{Msg: msg}
		if seed%3 == 0 {
			e.Details = []Detail{{Type: "t", Value: []byte("v")}}
		}
		trailer := make([]byte, rng.IntN(st.maxMsg/2))
		code, payload, tr := st.endFitting(NotFound, encodeErrorPayload(e), trailer)
		got, _ := decodeErrorPayload(payload)
		switch {
		case code != NotFound:
			t.Fatalf("seed %d: code %v, want NotFound kept", seed, code)
		case len(payload)+len(tr) > st.maxMsg:
			t.Fatalf("seed %d: %d+%d bytes over the limit %d", seed, len(payload), len(tr), st.maxMsg)
		}
		head, _, ok := strings.Cut(got, " [cut from")
		if !ok || !strings.HasPrefix(msg, head) {
			t.Fatalf("seed %d (limit %d, trailer %d): the client's message %q... is not a cut of the handler's %q...",
				seed, st.maxMsg, len(tr), got[:min(len(got), 40)], msg[:min(len(msg), 40)])
		}
	}
}

// TestCutRunesLongestPrefix (r): cutRunes keeps the longest prefix that
// splits no character, as utf8 decodes the string: a byte that is not
// UTF-8 is a character of its own, so a run of them is cut where the
// limit falls, not dropped whole. Checked against decoding from the
// start.
func TestCutRunesLongestPrefix(t *testing.T) {
	pieces := []string{"e", "é", "€", "🙂", "\x80", "\xbf", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x99"}
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := sb.String()
		n := rng.IntN(len(s) + 2)
		want := 0 // the last character boundary at or before n
		for i := 0; i <= min(n, len(s)); {
			want = i
			if i == len(s) {
				break
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		if got := cutRunes(s, n); got != s[:want] {
			t.Fatalf("seed %d: cutRunes(%q, %d) = %q, want %q", seed, s, n, got, s[:want])
		}
	}
}
