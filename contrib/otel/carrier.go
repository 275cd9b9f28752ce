package otel

import (
	"strings"

	"github.com/erpc-go/erpc"
	"go.opentelemetry.io/otel/propagation"
)

// MetadataCarrier is erpc.Metadata as a propagation.TextMapCarrier: the
// StatsHandler injects the trace context (W3C traceparent and tracestate,
// baggage: whatever the propagator writes) into a call's outgoing
// metadata and extracts it from a request's incoming metadata. Use it to
// do the same by hand, from an interceptor say:
//
//	md := erpc.Metadata{}
//	otel.GetTextMapPropagator().Inject(ctx, erpcotel.MetadataCarrier(md))
//	ctx = erpc.NewOutgoingContext(ctx, md)
//
// Set replaces a key's values; it needs a non-nil map. Keys are lowered,
// as erpc's metadata keys are.
type MetadataCarrier erpc.Metadata

var _ propagation.TextMapCarrier = MetadataCarrier(nil)

// Get returns the first value of key, or "".
func (c MetadataCarrier) Get(key string) string { return erpc.Metadata(c).Get(key) }

// Set makes value key's only value.
func (c MetadataCarrier) Set(key, value string) { c[strings.ToLower(key)] = []string{value} }

// Keys lists the keys.
func (c MetadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
