//go:build !linux

package tcp

import "github.com/erpc-go/erpc/transport"

type iovec struct{}

// writeDirect writes nothing here: the writer goroutine writes everything.
func (c *conn) writeDirect([]transport.Message) int { return 0 }

func (c *conn) writeOn(uintptr) {}
