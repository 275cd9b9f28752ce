//go:build linux && !erpc_portable

package udp

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A lone datagram, the common case of a latency-bound call (one request
// packet, one response packet), goes through the kernel's cheapest calls:
// sendto and recvfrom take the buffer and the address as arguments, where
// sendmmsg and recvmsg first copy a message header and its iovecs in from
// user memory and walk them. Measured on the 2-CPU VM this was written on
// (32-byte datagrams to itself on loopback, 300,000 each, three rounds):
// sendto 3.02-3.12 us against sendmmsg 3.19-3.31 us, recvfrom 1.61-1.69 us
// against recvmsg 1.69-1.72 us; a round trip has one of each per side.
//
// sendto needs the datagram in one piece, so a lone datagram of up to
// oneMax bytes is gathered (head and payload) into a scratch buffer: at
// that size the copy costs a few tens of nanoseconds, a fraction of what
// the header walk saves. Larger ones keep sendmmsg, whose iovecs cost no
// copy. recvfrom cannot report GRO's segment size, so once GRO is on
// (noteBatch) lone receives keep recvmsg.
const oneMax = 2048

// sendOne sends entry e with sendto; like sendmmsg, it returns 1 when the
// datagram left. An entry too large to gather goes through sendmmsg.
func (b *txBatch) sendOne(fd uintptr, e int) (uintptr, syscall.Errno) {
	h := &b.hdrs[e].Hdr
	n := 0
	for _, iov := range unsafe.Slice(h.Iov, h.Iovlen) {
		if n+int(iov.Len) > len(b.one) {
			r, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[e])), 1, unix.MSG_DONTWAIT, 0, 0)
			return r, errno
		}
		n += copy(b.one[n:], unsafe.Slice(iov.Base, iov.Len))
	}
	var name uintptr
	if h.Namelen > 0 {
		name = uintptr(unsafe.Pointer(h.Name))
	}
	_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b.one[0])), uintptr(n),
		unix.MSG_DONTWAIT, name, uintptr(h.Namelen))
	if errno != 0 {
		return 0, errno
	}
	b.ones++
	return 1, 0
}

// recvOne receives one datagram into message 0 of the batch: with
// recvfrom while GRO is off, with recvmsg, which reports GRO's segment
// size, once it is on. It returns 1 when a datagram came.
func (t *Transport) recvOne(fd uintptr) (uintptr, syscall.Errno) {
	if !t.groOn {
		return t.rx.recvfrom(fd)
	}
	n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&t.rx.hdrs[0].Hdr)), unix.MSG_DONTWAIT)
	if errno != 0 {
		return 0, errno
	}
	t.rx.hdrs[0].Len = uint32(n)
	return 1, 0
}

// recvfrom receives one datagram into message 0 of the batch with recvfrom,
// leaving the batch as recvmsg would (length, source, no control message);
// it returns 1 when a datagram came. MSG_TRUNC makes the kernel report a
// datagram's real size, so one larger than the buffer is seen as truncated
// and dropped like recvmsg's.
func (b *rxBatch) recvfrom(fd uintptr) (uintptr, syscall.Errno) {
	h := &b.hdrs[0].Hdr
	namelen := uint32(unix.SizeofSockaddrInet6)
	r, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b.bufs[0])), recvBufSize,
		unix.MSG_DONTWAIT|unix.MSG_TRUNC, uintptr(unsafe.Pointer(&b.names[0])), uintptr(unsafe.Pointer(&namelen)))
	if errno != 0 {
		return 0, errno
	}
	h.Namelen = namelen
	h.SetControllen(0)
	if r > recvBufSize {
		h.Flags = unix.MSG_TRUNC
		r = recvBufSize
	}
	b.hdrs[0].Len = uint32(r)
	b.ones++
	return 1, 0
}
