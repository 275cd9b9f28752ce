package erpc

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/erpc-go/erpc/internal/wire"
)

// Metadata is key/value pairs sent beside a message (like gRPC's
// metadata): a request's (trace context, auth tokens, request IDs; see
// NewOutgoingContext and IncomingMetadata), or a response's headers and
// trailers (see SetHeader, SetTrailer and WithResponseMetadata). Keys are
// lower case; a key may have several values; values are any bytes. A call
// whose context carries none, and an answer whose handler set none, send
// nothing extra on the wire. It has gRPC's metadata.MD's type, so each
// converts to the other, and so do pointers to them.
type Metadata map[string][]string

// Pairs makes Metadata from key, value, key, value... (keys are lowered).
func Pairs(kv ...string) Metadata {
	md := Metadata{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := strings.ToLower(kv[i])
		md[k] = append(md[k], kv[i+1])
	}
	return md
}

// Get returns the first value of key, or "".
func (md Metadata) Get(key string) string {
	if vs := md[strings.ToLower(key)]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// Clone returns a copy of md.
func (md Metadata) Clone() Metadata {
	out := make(Metadata, len(md))
	for k, vs := range md {
		out[k] = slices.Clone(vs)
	}
	return out
}

type outgoingKey struct{}
type incomingKey struct{}
type peerKey struct{}

// NewOutgoingContext returns ctx carrying md: calls made with it send md
// to the server. It replaces metadata ctx already carried.
func NewOutgoingContext(ctx context.Context, md Metadata) context.Context {
	return context.WithValue(ctx, outgoingKey{}, md)
}

// AppendToOutgoingContext returns ctx carrying its outgoing metadata plus
// the pairs key, value, key, value...
func AppendToOutgoingContext(ctx context.Context, kv ...string) context.Context {
	md, _ := OutgoingMetadata(ctx)
	md = md.Clone()
	for k, vs := range Pairs(kv...) {
		md[k] = append(md[k], vs...)
	}
	return NewOutgoingContext(ctx, md)
}

// OutgoingMetadata is the metadata calls made with ctx send.
func OutgoingMetadata(ctx context.Context) (Metadata, bool) {
	md, ok := ctx.Value(outgoingKey{}).(Metadata)
	return md, ok
}

// IncomingMetadata is the metadata the caller sent with the request a
// handler's context belongs to.
func IncomingMetadata(ctx context.Context) (Metadata, bool) {
	md, ok := ctx.Value(incomingKey{}).(Metadata)
	return md, ok && md != nil
}

// PeerFromContext is the address of the client whose request a handler's
// context belongs to.
func PeerFromContext(ctx context.Context) (netip.AddrPort, bool) {
	p, ok := ctx.Value(peerKey{}).(netip.AddrPort)
	return p, ok
}

// withMetadata prefixes req with the metadata block of md, if any; it
// allocates only then.
func withMetadata(md Metadata, req []byte) ([]byte, bool) {
	if len(md) == 0 {
		return req, false
	}
	keys := make([]string, 0, len(md))
	size := len(req) + 8
	for k, vs := range md {
		keys = append(keys, strings.ToLower(k))
		size += len(k) + 4
		for _, v := range vs {
			size += len(v) + 2
		}
	}
	slices.Sort(keys)
	lowered := md
	for _, k := range keys {
		if _, ok := md[k]; !ok { // a key given with capitals
			lowered = make(Metadata, len(md))
			for k, vs := range md {
				lowered[strings.ToLower(k)] = append(lowered[strings.ToLower(k)], vs...)
			}
			keys = slices.Compact(keys)
			break
		}
	}
	b := wire.AppendMetadata(make([]byte, 0, size), keys, lowered)
	return append(b, req...), true
}

// parseRequestMetadata splits a request's data into its metadata and its
// message; bad reports a malformed block (the message is then empty).
func parseRequestMetadata(data []byte) (md Metadata, msg []byte, bad bool) {
	md = Metadata{}
	msg, err := wire.ParseMetadata(data, func(k string, vs []string) { md[k] = append(md[k], vs...) })
	if err != nil {
		return nil, nil, true
	}
	return md, msg, false
}
