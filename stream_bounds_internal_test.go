package erpc

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEndFittingCutsWholeRunes (r): a status message too long for the
// session's limit is cut to fit, beside trailers of any size, and the
// cut never splits a character: the client's message stays valid UTF-8,
// a prefix of the handler's, and the frame fits the limit. Before, the
// cut fell on a byte count and could leave half a character.
func TestEndFittingCutsWholeRunes(t *testing.T) {
	runes := []string{"e", "é", "世", "🙂"}
	st := &serverStream{hd: &streamHandler{name: "S"}}
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 3))
		st.maxMsg = 64 + rng.IntN(2048)
		var sb strings.Builder
		for sb.Len() < st.maxMsg+rng.IntN(3*st.maxMsg) {
			sb.WriteString(runes[rng.IntN(len(runes))])
		}
		msg := sb.String()
		trailer := make([]byte, rng.IntN(st.maxMsg/2))
		code, payload, tr := st.endFitting(NotFound, encodeErrorPayload(&Error{Msg: msg}), trailer)
		got, _ := decodeErrorPayload(payload)
		switch {
		case code != NotFound:
			t.Fatalf("seed %d: code %v, want NotFound kept", seed, code)
		case len(payload)+len(tr) > st.maxMsg:
			t.Fatalf("seed %d: %d+%d bytes over the limit %d", seed, len(payload), len(tr), st.maxMsg)
		case !utf8.ValidString(got):
			t.Fatalf("seed %d: the cut message is not valid UTF-8: ...%q", seed, got[max(0, len(got)-60):])
		}
		head, _, ok := strings.Cut(got, " [cut from")
		if !ok || !strings.HasPrefix(msg, head) {
			t.Fatalf("seed %d: %q is not a cut of the handler's message", seed, got[:min(len(got), 80)])
		}
	}
}
