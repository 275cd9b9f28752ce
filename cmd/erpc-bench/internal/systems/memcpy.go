package systems

import (
	"time"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/meter"
)

// memcpyClient is the bandwidth scenario's reference: the same sizes copied
// from one buffer to another in the client's process, one copy at a time.
// It moves each byte once, where a same-host RPC moves it at least twice
// (into the shared or kernel buffer, and out), so GB/s against it says how
// far a transport is from the memory system's own speed.
type memcpyClient struct{}

func (memcpyClient) Close() {}

func (memcpyClient) Run(p meter.Point, m *meter.Meter) error {
	rec := m.Recorder()
	src, dst := meter.Payload(p.Size), make([]byte, p.Size)
	for !m.Stopped() {
		t0 := time.Now()
		copy(dst, src)
		rec.Done(m, t0, nil)
	}
	return nil
}
