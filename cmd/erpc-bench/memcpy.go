package main

import "time"

// memcpyClient is the bandwidth scenario's reference: the same sizes copied
// from one buffer to another in the client's process, one copy at a time.
// It moves each byte once, where a same-host RPC moves it at least twice
// (into the shared or kernel buffer, and out), so GB/s against it says how
// far a transport is from the memory system's own speed.
type memcpyClient struct{}

func (memcpyClient) close() {}

func (memcpyClient) run(p point, m *meter) error {
	rec := m.recorder()
	src, dst := payload(p.size), make([]byte, p.size)
	for !m.stopped() {
		t0 := time.Now()
		copy(dst, src)
		rec.done(m, t0, nil)
	}
	return nil
}
