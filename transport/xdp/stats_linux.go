//go:build linux

package xdp

import (
	"sync/atomic"
	"unsafe"

	"github.com/erpc-go/erpc/transport"
	"golang.org/x/sys/unix"
)

// Stats counts what the transport moved, for tests and monitoring.
type Stats struct {
	RingReceived   uint64 // datagrams from the RX rings (the AF_XDP path)
	KernelReceived uint64 // datagrams from the kernel socket (what the program passed)
	Sent           uint64 // datagrams queued on the TX ring
	Dropped        uint64 // datagrams not sent: no MAC for the peer, or no free TX frame
	Malformed      uint64 // frames in the RX rings that were not UDP to this address
}

// counters are Stats as the loop adds to them, once per batch.
type counters struct {
	ringReceived, kernelReceived, sent, dropped, malformed atomic.Uint64
}

// Stats returns the counts so far; any goroutine may call it.
func (t *Transport) Stats() Stats {
	return Stats{
		RingReceived:   t.stats.ringReceived.Load(),
		KernelReceived: t.stats.kernelReceived.Load(),
		Sent:           t.stats.sent.Load(),
		Dropped:        t.stats.dropped.Load(),
		Malformed:      t.stats.malformed.Load(),
	}
}

// KernelStats is the kernel's XDP_STATISTICS of the sockets, summed: what
// it dropped because the RX ring was full, the fill ring empty, or a
// descriptor invalid.
func (t *Transport) KernelStats() (unix.XDPStatistics, error) {
	var sum unix.XDPStatistics
	if !t.enter() {
		return sum, transport.ErrClosed
	}
	defer t.exit()
	for _, x := range t.xsks {
		var s unix.XDPStatistics
		size := uint32(unsafe.Sizeof(s))
		if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(x.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
			uintptr(unsafe.Pointer(&s)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
			return sum, e
		}
		sum.Rx_dropped += s.Rx_dropped
		sum.Rx_invalid_descs += s.Rx_invalid_descs
		sum.Tx_invalid_descs += s.Tx_invalid_descs
		sum.Rx_ring_full += s.Rx_ring_full
		sum.Rx_fill_ring_empty_descs += s.Rx_fill_ring_empty_descs
		sum.Tx_ring_empty_descs += s.Tx_ring_empty_descs
	}
	return sum, nil
}
