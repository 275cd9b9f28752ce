package erpc

import (
	"fmt"
	"math"
	"time"

	"github.com/erpc-go/erpc/internal/wire"
)

// Numeric options are checked when the endpoint opens (Listen,
// Server.Listen, and the package-level Dial, which opens one): a value out
// of an option's range is an InvalidArgument naming the option and its
// range, not a value quietly replaced by a default or a bound. Zero is
// every option's default. Negative values are refused where they mean
// nothing; WithSpin, WithBusyPoll and WithStallLog give them a meaning.

// The bounds the engine and the wire format set.
const (
	maxOptionPaths   = 64
	maxOptionWindow  = 1 << 15
	maxOptionCredits = 1 << 15
	minOptionPacket  = wire.HeaderLen + wire.MinConnectData // a connect must fit
	maxOptionPacket  = wire.HeaderLen + 0xFFFF              // a packet's data length is 16 bits
	maxOptionMessage = math.MaxUint32                       // a message's size is 32 bits
	unboundedOption  = math.MaxInt64
)

// optionRange is one numeric option's value and the range it must be in
// (zero, the default, is always allowed).
type optionRange struct {
	name     string
	value    int64
	min, max int64
	duration bool
}

func (r optionRange) ok() bool { return r.value == 0 || (r.value >= r.min && r.value <= r.max) }

func (r optionRange) error() *Error {
	show := func(v int64) string {
		if r.duration {
			return time.Duration(v).String()
		}
		return fmt.Sprint(v)
	}
	want := fmt.Sprintf("0 (the default) or %s to %s", show(r.min), show(r.max))
	switch {
	case r.max == unboundedOption && r.min == 1:
		want = "0 (the default) or more, not negative"
	case r.max == unboundedOption:
		want = fmt.Sprintf("0 (the default) or %s or more", show(r.min))
	}
	return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("%s(%s) is out of range: want %s", r.name, show(r.value), want)}
}

// check returns the error of the first numeric option out of its range.
func (o *options) check() *Error {
	e := &o.engine
	for _, r := range [...]optionRange{
		{name: "WithPaths", value: int64(o.paths), min: 1, max: maxOptionPaths},
		{name: "WithWindow", value: int64(e.Window), min: 1, max: maxOptionWindow},
		{name: "WithCredits", value: int64(e.Credits), min: 1, max: maxOptionCredits},
		{name: "WithMaxMessageSize", value: int64(e.MaxMsgSize), min: 1, max: maxOptionMessage},
		{name: "WithMaxPacketSize", value: int64(e.MaxPacketSize), min: minOptionPacket, max: maxOptionPacket},
		{name: "WithMaxHeldRequests", value: int64(e.MaxHeldRequests), min: 1, max: unboundedOption},
		{name: "WithMaxHeldBytes", value: int64(e.MaxHeldBytes), min: 1, max: unboundedOption},
		{name: "WithWorkers", value: int64(o.workers), min: 1, max: unboundedOption},
		{name: "WithQueueDepth", value: int64(o.queue), min: 1, max: unboundedOption},
		{name: "WithSocketBuffer", value: int64(o.sockBuf), min: 1, max: unboundedOption},
		{name: "WithFailureTimeout", value: int64(e.FailureTimeout), min: 1, max: unboundedOption, duration: true},
		{name: "WithKeepalive interval", value: int64(e.KeepaliveInterval), min: 1, max: unboundedOption, duration: true},
		{name: "WithKeepalive idle", value: int64(e.IdleTimeout), min: 1, max: unboundedOption, duration: true},
		{name: "WithSLO target", value: int64(o.slo), min: 1, max: unboundedOption, duration: true},
		{name: "WithSLO meanService", value: int64(o.sloMean), min: 1, max: unboundedOption, duration: true},
	} {
		if !r.ok() {
			return r.error()
		}
	}
	if o.dispatch != DispatchShared && o.dispatch != DispatchHash {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("WithDispatch(%d) is out of range: want DispatchShared or DispatchHash", o.dispatch)}
	}
	return o.checkTLS()
}
