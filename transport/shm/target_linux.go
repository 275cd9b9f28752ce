//go:build linux

package shm

import "path/filepath"

// Target is what a peer dials to reach the transport ("shm://" and the
// absolute path of its socket), or "" for a client-only transport.
func (t *Transport) Target() string {
	if t.ln == nil {
		return ""
	}
	abs, err := filepath.Abs(t.ln.Addr().String())
	if err != nil {
		return ""
	}
	return "shm://" + abs
}
