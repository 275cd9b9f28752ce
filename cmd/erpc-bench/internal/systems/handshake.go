package systems

import (
	"context"
	"time"

	"github.com/erpc-go/erpc"
)

// Handshaker is a client that can time a fresh session: open a new
// connection (or erpc session, on an endpoint of its own), make one
// 32-byte echo call on it, and report the time from the start to that
// call's answer; the session is closed after, off the clock. The
// handshake scenario measures it; erpc, erpc-tls, grpc, grpc-tls, quic
// and quic-stream have it.
type Handshaker interface {
	Handshake(ctx context.Context) (time.Duration, error)
}

// handshakeReq is the first call's request.
var handshakeReq = make([]byte, 32)

// Handshake dials a session from an endpoint of its own, as erpc.Dial
// does, and times it to the first call's answer.
func (c *ErpcClient) Handshake(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	s, err := erpc.Dial(ctx, c.Target, c.opts...)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	_, err = s.Call(ctx, "Echo", handshakeReq, nil)
	return time.Since(t0), err
}
