package erpc

import "errors"

// ErrNotExecuted is matched, with errors.Is, by the error of every call
// that provably never ran: see NotExecuted.
var ErrNotExecuted = errors.New("erpc: the call never ran")

// NotExecuted reports whether err proves that its call never ran: no
// handler started for it on the server, and none ever will, so it may be
// sent again, to the same server or another, without running twice. It
// holds for a call:
//
//   - refused by the server before it ran: the server was full (the
//     engine's bound on held requests, WithWorkers's queue or WithSLO's
//     admission: ResourceExhausted), the request was larger than the
//     server takes (InvalidArgument), the server was shutting down
//     (Unavailable), had no such method (Unimplemented), or could not
//     read the request's metadata or decode a typed handler's request
//     (InvalidArgument);
//   - refused before it was sent: larger than the session's limit, or a
//     typed request Invoke could not encode, a nil one included
//     (InvalidArgument), on a closed session or endpoint, while the
//     session waits to reconnect
//     after failures (Unavailable), made on the endpoint's own loop
//     (FailedPrecondition), or with a context that ended before the
//     endpoint took the call (Canceled, DeadlineExceeded);
//   - whose session ended before the request reached a live server
//     session: never sent (it waited for a slot, for credits or for the
//     connection); sent only after the server had lost the session (a
//     restarted server's reset says since when); or not yet seen by a
//     server that closed the session itself (it names the first request
//     it never saw). The Session sends such a call once more, on a new
//     session, and fails it only if that ends the same way; but not
//     when the server did not answer within the failure timeout (a
//     connect or a session that timed out), so that a server that is
//     gone fails the call within one failure timeout.
//
// It is false for every other failure, each of which may or may not have
// run: a call in flight when its server failed, restarted or closed, a
// call canceled or past its deadline after it was sent, and any error a
// handler returned.
func NotExecuted(err error) bool { return errors.Is(err, ErrNotExecuted) }

// neverRan is the cause of an error that proves its call never ran: it
// matches ErrNotExecuted and unwraps to the cause proper, so errors.Is
// still finds context.Canceled, say.
type neverRan struct{ cause error }

func (n neverRan) Error() string {
	if n.cause == nil {
		return ErrNotExecuted.Error()
	}
	return n.cause.Error()
}

func (n neverRan) Unwrap() error        { return n.cause }
func (n neverRan) Is(target error) bool { return target == ErrNotExecuted }

// notRun marks e as the error of a call that never ran, in place (e must
// be the caller's own, not a shared value).
func notRun(e *Error) *Error {
	if _, done := e.Cause.(neverRan); !done {
		e.Cause = neverRan{e.Cause}
	}
	return e
}

// notRunCopy is notRun on a copy of a shared error value.
func notRunCopy(e *Error) *Error {
	c := *e
	return notRun(&c)
}

// notExecutedDetail is the type of the detail with which a server's own
// refusals (not its handlers') say the request never ran. The client
// takes it off and marks the error instead; a handler cannot send it.
const notExecutedDetail = "erpc.NotExecuted"

// refusalPayload is the answer of a request the server refused before
// running it: e, and the detail that says so.
func refusalPayload(e *Error) []byte {
	r := *e
	r.Details = append(e.Details[:len(e.Details):len(e.Details)], Detail{Type: notExecutedDetail})
	return encodeErrorPayload(&r)
}

// serverFaultDetail is the type of the detail with which a server says
// an error answer is its own failure (a handler that panicked), not the
// handler's answer: a Client holds it against the replica. A handler
// cannot send it either.
const serverFaultDetail = "erpc.ServerFault"

// faultPayload is the answer of a request the server failed itself: e,
// and the detail that says so.
func faultPayload(e *Error) []byte {
	r := *e
	r.Details = append(e.Details[:len(e.Details):len(e.Details)], Detail{Type: serverFaultDetail})
	return encodeErrorPayload(&r)
}

// withoutNotExecuted returns details without the never-ran mark, and
// whether it was there. It allocates only when the mark is there.
func withoutNotExecuted(details []Detail) ([]Detail, bool) {
	return withoutMark(details, notExecutedDetail)
}

// withoutMark returns details without those of type mark (a server's
// own), and whether there were any. It allocates only when there were.
func withoutMark(details []Detail, mark string) ([]Detail, bool) {
	for i, d := range details {
		if d.Type != mark {
			continue
		}
		out := append(details[:i:i], details[i+1:]...)
		out, _ = withoutMark(out, mark)
		if len(out) == 0 {
			out = nil
		}
		return out, true
	}
	return details, false
}

// withoutServerMarks is a handler's details without the marks only the
// server itself may send (never ran, server fault).
func withoutServerMarks(details []Detail) ([]Detail, bool) {
	d, a := withoutMark(details, notExecutedDetail)
	d, b := withoutMark(d, serverFaultDetail)
	return d, a || b
}
