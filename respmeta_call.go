package erpc

import (
	"context"
	"errors"
	"fmt"

	"github.com/erpc-go/erpc/internal/proto"
	"github.com/erpc-go/erpc/internal/wire"
)

// A caller receives an answer's headers and trailers through its call's
// context (WithResponseMetadata), or Invoke's Header and Trailer options,
// which gRPC's grpc.Header and grpc.Trailer call options map onto (a
// *metadata.MD converts to a *Metadata: both are map[string][]string).

type responseSinkKey struct{}

// responseSink is where a call puts its answer's metadata.
type responseSink struct{ header, trailer *Metadata }

// WithResponseMetadata returns ctx for calls that receive their answer's
// metadata: when a call made with it (Call, Invoke) returns, *header
// holds the headers and *trailer the trailers the server's handler set
// (erpc.SetHeader, erpc.SetTrailer), for a success or an error answer.
// An answer that carries no metadata, and a call that gets no answer,
// leave both as they were: declare them per call, as with gRPC's
// grpc.Header(&md). Either may be nil. Make one call at a time with the
// returned context: concurrent calls would write the same variables.
// Session.Go calls do not receive metadata.
func WithResponseMetadata(ctx context.Context, header, trailer *Metadata) context.Context {
	return context.WithValue(ctx, responseSinkKey{}, &responseSink{header, trailer})
}

// Header is an Invoke option: md receives the answer's headers, as with
// WithResponseMetadata.
func Header(md *Metadata) CallOption { return func(o *callOptions) { o.header = md } }

// Trailer is an Invoke option: md receives the answer's trailers, as
// with WithResponseMetadata.
func Trailer(md *Metadata) CallOption { return func(o *callOptions) { o.trailer = md } }

// withSink is ctx with Invoke's Header and Trailer options (which replace
// what WithResponseMetadata put in ctx), or ctx if it has none.
func (o *callOptions) withSink(ctx context.Context) context.Context {
	if o.header == nil && o.trailer == nil {
		return ctx
	}
	return WithResponseMetadata(ctx, o.header, o.trailer)
}

// deliverResponseMetadata gives the answer's metadata to the call's
// context, if it asks for it (the caller's goroutine, once the call is
// done).
func (c *call) deliverResponseMetadata(ctx context.Context) {
	sink, ok := ctx.Value(responseSinkKey{}).(*responseSink)
	if !ok {
		return
	}
	if sink.header != nil {
		*sink.header = c.respHeader
	}
	if sink.trailer != nil {
		*sink.trailer = c.respTrailer
	}
}

// takeResponseMetadata parses the metadata ahead of an answer (on the
// loop, for a response that carries wire.FlagMetadata): it keeps the
// headers and trailers in c and moves the message to the start of the
// buffer, so that a caller who passes it back to the next call keeps its
// whole capacity. A malformed answer fails the call with DataLoss, and is
// counted; then it returns false, c being finished.
func (ep *Endpoint) takeResponseMetadata(c *call, ev *proto.Event) bool {
	var header, trailer Metadata
	collect := func(md *Metadata) func(string, []string) {
		return func(k string, vs []string) {
			if *md == nil {
				*md = Metadata{}
			}
			(*md)[k] = append((*md)[k], vs...)
		}
	}
	msg, err := wire.ParseResponseMetadata(ev.Data, collect(&header), collect(&trailer))
	if err != nil {
		ep.eng.CountMalformedMetadata()
		what := fmt.Sprintf("the server's answer carries malformed metadata (%v)", err)
		if errors.Is(err, wire.ErrMetadataTooLarge) {
			what = fmt.Sprintf("the server's answer carries metadata over MaxMetadataSize (%d bytes)", MaxMetadataSize)
		}
		ep.finishOnLoop(c, nil, &Error{Code: DataLoss, Msg: c.where(what), Cause: err})
		return false
	}
	c.respHeader, c.respTrailer, c.gotMeta = header, trailer, true
	ev.Data = ev.Data[:copy(ev.Data, msg)]
	return true
}
