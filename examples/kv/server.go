package kv

import (
	"context"
	"errors"

	"github.com/erpc-go/erpc"
)

// Method names on the wire. A GET's request is the 16-byte key and its
// response the value; a SET's request is the key followed by the value
// (the key's size is fixed, so the request's length says the value's),
// and its response empty. A request of the wrong length fails with
// InvalidArgument.
const (
	MethodGet = "kv.Get"
	MethodSet = "kv.Set"
)

// The handlers' errors, made once: answering with them allocates nothing.
var (
	errKeySize   = erpc.Errorf(erpc.InvalidArgument, "%v", ErrKeySize)
	errValueSize = erpc.Errorf(erpc.InvalidArgument, "%v", ErrValueSize)
	errNotFound  = erpc.Errorf(erpc.NotFound, "%v", ErrNotFound)
	errFull      = erpc.Errorf(erpc.ResourceExhausted, "%v", ErrFull)
)

// Register adds GET and SET handlers for st to srv. They are raw handlers
// that answer from memory the endpoint owns, so a request allocates
// nothing. By default they run inline on the endpoint's event loop (a
// request takes about a microsecond); pass erpc.Background() to run them
// on the endpoint's workers instead, whose number and dispatch policy are
// the endpoint's options given to Listen (erpc.WithWorkers and the like).
func Register(srv *erpc.Server, st *Store, opts ...erpc.HandlerOption) error {
	if err := srv.HandleRaw(MethodGet, func(r erpc.Request) {
		v, err := st.Get(r.Data(), r.ResponseBuffer(MaxValue))
		if err != nil {
			r.RespondError(statusOf(err))
			return
		}
		r.Respond(v)
	}, opts...); err != nil {
		return err
	}
	return srv.HandleRaw(MethodSet, func(r erpc.Request) {
		d := r.Data()
		if len(d) < KeySize+MinValue || len(d) > KeySize+MaxValue {
			r.RespondError(errValueSize)
			return
		}
		if err := st.Set(d[:KeySize], d[KeySize:]); err != nil {
			r.RespondError(statusOf(err))
			return
		}
		r.Respond(nil)
	}, opts...)
}

// statusOf maps a Store error to the handlers' erpc error.
func statusOf(err error) error {
	switch {
	case errors.Is(err, ErrKeySize):
		return errKeySize
	case errors.Is(err, ErrValueSize):
		return errValueSize
	case errors.Is(err, ErrNotFound):
		return errNotFound
	case errors.Is(err, ErrFull):
		return errFull
	}
	return err
}

// Get fetches key's value over s, into buf if it has room. A missing key
// fails with code NotFound.
func Get(ctx context.Context, s *erpc.Session, key, buf []byte) ([]byte, error) {
	return s.Call(ctx, MethodGet, key, buf)
}

// Set stores value under key over s. A key of the wrong size fails here,
// with InvalidArgument, since the request has no room to say it. The
// request is built in a buffer of its own, so key and value may be reused
// at once.
func Set(ctx context.Context, s *erpc.Session, key, value []byte) error {
	if len(key) != KeySize {
		return errKeySize
	}
	req := make([]byte, 0, len(key)+len(value))
	req = append(append(req, key...), value...)
	_, err := s.Call(ctx, MethodSet, req, nil)
	return err
}

// SetRequest builds a SET's request (key, then value) in buf, for callers
// that make their own calls (Session.Go, say).
func SetRequest(buf, key, value []byte) []byte {
	return append(append(buf[:0], key...), value...)
}
