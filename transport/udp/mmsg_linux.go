//go:build linux && !erpc_portable

package udp

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The batch structures below are what recvmmsg and sendmmsg read and write.
// They are allocated once per transport and reused for every call, which is
// why the Linux path allocates nothing per datagram (x/net's ReadBatch
// allocates per message).

const (
	batchSize   = 32      // mmsghdrs per recvmmsg or sendmmsg
	recvBufSize = 1 << 16 // one maximal datagram, or one GRO train
	// maxGSOSegments is the kernel's UDP_MAX_SEGMENTS on every kernel
	// that has UDP GSO (4.18+); newer ones allow 128.
	maxGSOSegments = 64
)

var (
	rxCtrlLen = unix.CmsgSpace(4) // UDP_GRO: an int, the segment size
	txCtrlLen = unix.CmsgSpace(2) // UDP_SEGMENT: a uint16
)

// rxBatch holds the receive side of recvmmsg: one buffer, address and
// control area per message.
type rxBatch struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for either family
	ctrl  []byte
	bufs  []byte
	ones  int // datagrams received with recvfrom (for tests)
}

func newRxBatch() rxBatch {
	b := rxBatch{
		hdrs:  make([]unix.Mmsghdr, batchSize),
		iovs:  make([]unix.Iovec, batchSize),
		names: make([]unix.RawSockaddrInet6, batchSize),
		ctrl:  make([]byte, batchSize*rxCtrlLen),
		bufs:  make([]byte, batchSize*recvBufSize),
	}
	for i := range b.hdrs {
		b.iovs[i].Base = &b.bufs[i*recvBufSize]
		b.iovs[i].SetLen(recvBufSize)
		h := &b.hdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Iov = &b.iovs[i]
		h.SetIovlen(1)
		h.Control = &b.ctrl[i*rxCtrlLen]
	}
	b.reset(batchSize)
	return b
}

// reset restores the fields the kernel overwrites in the first n
// messages, the ones the next call passes it.
func (b *rxBatch) reset(n int) {
	for i := range b.hdrs[:n] {
		h := &b.hdrs[i].Hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(rxCtrlLen)
		h.Flags = 0
		b.hdrs[i].Len = 0
	}
}

// data is message i's bytes.
func (b *rxBatch) data(i int) []byte {
	off := i * recvBufSize
	return b.bufs[off : off+int(b.hdrs[i].Len)]
}

// groSize is the segment size the kernel reported for message i when it
// coalesced several datagrams into it (UDP_GRO), or 0.
func (b *rxBatch) groSize(i int) int {
	h := &b.hdrs[i].Hdr
	ctrl := b.ctrl[i*rxCtrlLen : i*rxCtrlLen+int(h.Controllen)]
	for len(ctrl) >= unix.SizeofCmsghdr {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
		n := int(c.Len)
		if n < unix.SizeofCmsghdr || n > len(ctrl) {
			return 0
		}
		if c.Level == unix.SOL_UDP && c.Type == unix.UDP_GRO && n >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)])))
		}
		ctrl = ctrl[min(unix.CmsgSpace(n-unix.CmsgLen(0)), len(ctrl)):]
	}
	return 0
}

// txBatch holds the send side of sendmmsg. One entry carries one datagram,
// or with GSO a train of equal-sized datagrams to one peer that the kernel
// cuts apart (the last may be shorter). Entry e covers msgs[first[e]:first[e+1]].
type txBatch struct {
	hdrs  []unix.Mmsghdr
	names []unix.RawSockaddrInet6
	ctrl  []byte
	iovs  []unix.Iovec // two per datagram (Head and Payload); never reallocated
	first []int
	one   []byte // a lone datagram gathered for sendto (sendOne)
	ones  int    // datagrams sendOne sent with sendto (for tests)
}

func newTxBatch() txBatch {
	b := txBatch{
		hdrs:  make([]unix.Mmsghdr, batchSize),
		names: make([]unix.RawSockaddrInet6, batchSize),
		ctrl:  make([]byte, batchSize*txCtrlLen),
		// Room for every entry to be a full GSO train, so appending
		// never moves the iovecs that earlier entries point into.
		iovs:  make([]unix.Iovec, 0, 2*batchSize*maxGSOSegments),
		first: make([]int, 0, batchSize+1),
		one:   make([]byte, oneMax),
	}
	for i := range b.hdrs {
		b.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
	}
	return b
}

// putSegment fills entry e's control message with a UDP_SEGMENT of size.
func (b *txBatch) putSegment(e, size int) {
	ctrl := b.ctrl[e*txCtrlLen : (e+1)*txCtrlLen]
	c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[0]))
	c.Level = unix.SOL_UDP
	c.Type = unix.UDP_SEGMENT
	c.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&ctrl[unix.CmsgLen(0)])) = uint16(size)
	h := &b.hdrs[e].Hdr
	h.Control = &ctrl[0]
	h.SetControllen(txCtrlLen)
}

// decodeAddr reads a kernel-filled socket address.
func decodeAddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	pb := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network byte order
	port := uint16(pb[0])<<8 | uint16(pb[1])
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
	}
	return netip.AddrPort{}
}

// encodeAddr writes to into sa for a socket of the given family and
// returns the address length, or 0 when the socket cannot reach to.
func encodeAddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, v6 bool) uint32 {
	var nport uint16
	pb := (*[2]byte)(unsafe.Pointer(&nport)) // network byte order
	pb[0], pb[1] = byte(to.Port()>>8), byte(to.Port())
	if !v6 {
		if !to.Addr().Is4() && !to.Addr().Is4In6() {
			return 0
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Port: nport, Addr: to.Addr().Unmap().As4()}
		return unix.SizeofSockaddrInet4
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Port: nport, Addr: to.Addr().As16()}
	return unix.SizeofSockaddrInet6
}
