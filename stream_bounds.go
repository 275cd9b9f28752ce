package erpc

import (
	"fmt"
	"unicode/utf8"
)

// A server stream's Header and End frames travel in batches no larger
// than the session's message limit, as its messages do (st.maxMsg: the
// smaller end's WithMaxMessageSize, less 64 bytes): a frame beyond it
// would fail the whole batch, and with it every stream whose frames it
// carries. SetHeader and SendHeader refuse a header that would not fit;
// trailers that would not fit (SetTrailer returns no error) turn the
// stream's end into Internal, naming their size; and a status message
// too long for the rest is cut.

// headerFits returns an error if the header merged with md would not fit
// the session's limit (under st.mu).
func (st *serverStream) headerFits(md Metadata) error {
	n := len(metadataBlock(mergeMetadata(st.header.Clone(), md)))
	if n > st.maxMsg {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("stream %q: a header of %d bytes is larger than the session's limit of %d (WithMaxMessageSize, the smaller of the two ends', less a frame's header)",
			st.hd.name, n, st.maxMsg)}
	}
	return nil
}

// endFitting is the End frame's status (code, payload) and trailer block
// cut to the session's limit.
func (st *serverStream) endFitting(code Code, payload, trailer []byte) (Code, []byte, []byte) {
	if len(payload)+len(trailer) <= st.maxMsg {
		return code, payload, trailer
	}
	if len(trailer) > st.maxMsg/2 {
		code, trailer = Internal, nil
		payload = []byte(fmt.Sprintf("stream %q: the handler's trailers of %d bytes are larger than the session's limit of %d (WithMaxMessageSize, the smaller of the two ends')",
			st.hd.name, len(trailer), st.maxMsg))
	}
	if room := st.maxMsg - len(trailer); len(payload) > room {
		msg, _ := decodeErrorPayload(payload) // the details go: the message says why
		cut := fmt.Sprintf(" [cut from %d bytes to the session's limit]", len(msg))
		// The encoding may add bytes (a message that starts with a NUL
		// travels in the structured form, with its length): cut again
		// by what they take. The payload itself is cut only when the
		// note alone does not fit, and then it is plain text.
		keep := room - len(cut)
		payload = encodeErrorPayload(&Error{Msg: cutRunes(msg, keep) + cut})
		for len(payload) > room && keep > 0 {
			keep -= len(payload) - room
			payload = encodeErrorPayload(&Error{Msg: cutRunes(msg, keep) + cut})
		}
		if len(payload) > room {
			payload = payload[:max(0, room)]
		}
	}
	return code, payload, trailer
}

// cutRunes is the longest prefix of s of at most n bytes that splits no
// character, as utf8 decodes s: a byte that is not part of valid UTF-8 is
// a character of its own, so only a valid character that straddles n
// moves the cut back (to its start, at most utf8.UTFMax-1 bytes).
func cutRunes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	start := n
	for start > 0 && n-start < utf8.UTFMax-1 && !utf8.RuneStart(s[start]) {
		start--
	}
	if _, size := utf8.DecodeRuneInString(s[start:]); start < n && start+size > n {
		return s[:start]
	}
	return s[:n]
}
