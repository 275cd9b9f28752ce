//go:build linux && !erpc_portable

package udp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// groAfter is how many datagrams one receive batch must hold to switch
// UDP_GRO on. GRO coalesces what arrives in bursts (the trains of a
// multi-packet message, and a stream of small calls alike: without it a
// window of 64 small calls in flight ran at half the rate), but on a socket
// that only ever finds one datagram at a time it costs every receive a
// little (0.2-0.3 us a round trip in a loopback ping-pong), so it waits
// until bursts come.
const groAfter = 4

// noteBatch switches GRO on, for good, once a batch shows a burst.
func (t *Transport) noteBatch() {
	if t.groOn || t.rxN < groAfter {
		return
	}
	t.groOn = true
	setGRO(t.rc)
	for _, pc := range t.paths {
		setGRO(pc.rc)
	}
}

// setGRO asks the kernel to coalesce received trains (best effort: without
// it the kernel hands over one datagram at a time).
func setGRO(rc syscall.RawConn) {
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1)
	})
}
