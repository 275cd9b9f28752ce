//go:build !linux

package tcp

import (
	"errors"
	"net"
	"syscall"
)

// shareListenPort is Linux's: elsewhere dialed sockets use ephemeral ports.
func shareListenPort(*net.TCPListener) error {
	return errors.New("tcp: dialing from the listening port needs Linux")
}

func reuseControl(string, string, syscall.RawConn) error { return nil }
