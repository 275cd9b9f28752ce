package erpc

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/wire"
)

// MaxMetadataSize bounds the metadata of a request, and that of a response
// (its headers and trailers together), as encoded on the wire: the keys
// and values plus a few bytes of lengths per key and value. A server
// refuses a request over it (InvalidArgument, unrun), SetHeader and
// SetTrailer refuse to pass it, and a client fails a call whose answer is
// over it (DataLoss).
const MaxMetadataSize = wire.MaxMetadata

// Response headers and trailers, as gRPC has them: a handler sets them
// until it answers, and they travel with the answer, an error answer
// included. A unary answer is one message, so its headers and trailers
// leave together; SendHeader only fixes the headers. A handler that sets
// none sends nothing extra on the wire. Any goroutine may set them, while
// another answers: an addition that returns nil is in the answer, one
// that returns an error is not.

// SetHeader adds md to the response headers of the request whose handler
// ctx belongs to (grpc.SetHeader's counterpart): several calls add up. It
// fails once the request is answered or SendHeader fixed the headers, when
// ctx is no handler's, and when the response's metadata would pass
// MaxMetadataSize (nothing is added then).
func SetHeader(ctx context.Context, md Metadata) error {
	return requestOf(ctx).addResponseMetadata(md, setHeader)
}

// SendHeader adds md to the response headers, as SetHeader, and fixes
// them: later SetHeader and SendHeader calls fail, as gRPC's do once it
// sent its headers. On a unary call the headers still travel with the
// answer.
func SendHeader(ctx context.Context, md Metadata) error {
	return requestOf(ctx).addResponseMetadata(md, sendHeader)
}

// SetTrailer adds md to the response trailers, which travel with the
// answer, success or error (grpc.SetTrailer's counterpart). It fails once
// the request is answered, when ctx is no handler's, and when the
// response's metadata would pass MaxMetadataSize.
func SetTrailer(ctx context.Context, md Metadata) error {
	return requestOf(ctx).addResponseMetadata(md, setTrailer)
}

// SetHeader is erpc.SetHeader for a HandleRaw handler: md is added to the
// response headers, until the answer.
func (q Request) SetHeader(md Metadata) error { return q.addResponseMetadata(md, setHeader) }

// SendHeader is erpc.SendHeader for a HandleRaw handler.
func (q Request) SendHeader(md Metadata) error { return q.addResponseMetadata(md, sendHeader) }

// SetTrailer is erpc.SetTrailer for a HandleRaw handler: md is added to
// the response trailers, until the answer.
func (q Request) SetTrailer(md Metadata) error { return q.addResponseMetadata(md, setTrailer) }

type metadataOp uint8

const (
	setHeader metadataOp = iota
	sendHeader
	setTrailer
)

var metadataOpNames = [...]string{"SetHeader", "SendHeader", "SetTrailer"}

// requestKey finds a handler's reqCtx among a context's values.
type requestKey struct{}

// requestOf is the request a handler's context belongs to; a zero Request
// (whose additions fail) if ctx is no handler's.
func requestOf(ctx context.Context) Request {
	if c, ok := ctx.Value(requestKey{}).(*reqCtx); ok {
		return c.req
	}
	return Request{}
}

func (q Request) addResponseMetadata(md Metadata, op metadataOp) error {
	if len(md) == 0 && op != sendHeader {
		return nil // nothing to add (gRPC's SetHeader and SetTrailer say nil too)
	}
	if q.r == nil {
		return &Error{Code: Internal, Msg: fmt.Sprintf("erpc.%s: the context is not a handler's", metadataOpNames[op])}
	}
	r := q.hold(spent, 0)
	if r == nil {
		return errMetadataAnswered(op)
	}
	defer r.release(false)
	m := r.respMeta.Load()
	if m == nil {
		m = new(responseMeta)
		if !r.respMeta.CompareAndSwap(nil, m) {
			m = r.respMeta.Load()
		}
	}
	if err := m.add(md, op); err != nil {
		return err
	}
	if r.state.Load()&spent == 0 {
		// The answer has not begun: when it does, it finds m (which
		// only the request's recycling, which our reference holds off,
		// removes) and seals it after this addition.
		return nil
	}
	return m.settle(r, op)
}

// settle decides an addition made while the answer was beginning: the
// answer looked for the metadata at some instant after it began, maybe
// before m was there. Once the answer is written (a few instructions
// later: the answering goroutine does not block), m says whether it took
// m; if not, the addition did not make it, nor will any other.
func (m *responseMeta) settle(r *request, op metadataOp) error {
	for r.state.Load()&phAnswered == 0 {
		runtime.Gosched()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.taken {
		return nil // sealed after the addition (which checked it was not), so in the answer
	}
	m.sealed = true
	return errMetadataAnswered(op)
}

func errMetadataAnswered(op metadataOp) error {
	return &Error{Code: FailedPrecondition, Msg: fmt.Sprintf("erpc.%s: the request is already answered", metadataOpNames[op])}
}

// responseMeta is a request's response headers and trailers, made by the
// first addition: a request whose handler adds none has none.
type responseMeta struct {
	mu         sync.Mutex
	header     Metadata
	trailer    Metadata
	headerSent bool // SendHeader fixed the headers
	sealed     bool // no more additions: the answer began
	taken      bool // the answer carries them (it sealed them)
}

func (m *responseMeta) add(md Metadata, op metadataOp) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.sealed:
		return errMetadataAnswered(op)
	case op != setTrailer && m.headerSent:
		return &Error{Code: FailedPrecondition, Msg: fmt.Sprintf("erpc.%s: the headers were sent already (SendHeader)", metadataOpNames[op])}
	}
	header, trailer := m.header, m.trailer
	if op == setTrailer {
		trailer = merged(trailer, md)
	} else {
		header = merged(header, md)
	}
	if n := responseMetadataSize(header, trailer); n > MaxMetadataSize {
		return &Error{Code: ResourceExhausted, Msg: fmt.Sprintf("erpc.%s: the response's metadata would be %d bytes, over MaxMetadataSize (%d bytes)",
			metadataOpNames[op], n, MaxMetadataSize)}
	}
	m.header, m.trailer = header, trailer
	m.headerSent = m.headerSent || op == sendHeader
	return nil
}

// merged is a copy of into with md's values added, keys lowered; a key
// with no values adds nothing (gRPC's metadata cannot carry one).
func merged(into, md Metadata) Metadata {
	out := into.Clone()
	for k, vs := range md {
		if len(vs) > 0 {
			k = strings.ToLower(k)
			out[k] = append(out[k], vs...)
		}
	}
	return out
}

func sortedKeys(md Metadata) []string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func responseMetadataSize(header, trailer Metadata) int {
	return wire.ResponseMetadataSize(sortedKeys(header), header, sortedKeys(trailer), trailer)
}

// sealResponseMetadata ends the request's additions, for the answer resp
// (the one goroutine that wins the answer calls it): if there are headers
// or trailers, it returns resp behind their blocks, in new memory the
// answer owns, and records the flag that says so; else resp and owned as
// they are.
func (r *request) sealResponseMetadata(resp []byte, owned bool) ([]byte, bool) {
	m := r.respMeta.Load()
	m.mu.Lock()
	m.sealed, m.taken = true, true
	header, trailer := m.header, m.trailer
	m.mu.Unlock()
	if len(header) == 0 && len(trailer) == 0 {
		return resp, owned
	}
	hk, tk := sortedKeys(header), sortedKeys(trailer)
	n := wire.ResponseMetadataSize(hk, header, tk, trailer) + len(resp)
	out := wire.AppendResponseMetadata(make([]byte, 0, proto.BufferCap(n)), hk, header, tk, trailer)
	r.respFlags = wire.FlagMetadata
	return append(out, resp...), true
}

// answerMessage is the answer without its metadata blocks: the message,
// or an error answer's payload.
func (r *request) answerMessage() []byte {
	if r.respFlags&wire.FlagMetadata == 0 {
		return r.resp
	}
	rest, err := wire.ParseResponseMetadata(r.resp, func(string, []string) {}, func(string, []string) {})
	if err != nil {
		return nil // not ours: the blocks were made by sealResponseMetadata
	}
	return rest
}
