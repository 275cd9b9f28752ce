//go:build linux

package xdp

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UMEM geometry: frameSize-byte frames (2 KiB holds a 1500-byte MTU frame
// with the 256 bytes of headroom zero-copy drivers keep), the first half
// lent to the kernel for receiving through the fill ring, the second half
// the TX frames this side builds datagrams in.
const (
	frameSize = 2048
	numFrames = 4096
	rxFrames  = numFrames / 2
	ringSize  = numFrames / 2
)

// xsk is one AF_XDP socket bound to one queue of the interface, with its
// own UMEM and its four rings.
type xsk struct {
	fd                    int
	umem                  []byte
	fill, comp, rx, tx    *ring
	txFree                []uint64 // TX frames not in the TX ring
	txQueued              uint32   // frames written past the TX ring's producer, not submitted yet
	zeroCopy, needsWakeup bool
}

// openXSK opens a socket on queue of ifindex, in zero-copy mode if the
// driver has it (and copyOnly is false), else in copy mode.
func openXSK(ifindex, queue int, copyOnly bool) (*xsk, error) {
	var errs []error
	if !copyOnly {
		x, err := openXSKMode(ifindex, queue, unix.XDP_ZEROCOPY)
		if err == nil {
			x.zeroCopy = true
			return x, nil
		}
		errs = append(errs, fmt.Errorf("zero copy: %w", err))
	}
	x, err := openXSKMode(ifindex, queue, unix.XDP_COPY)
	if err == nil {
		return x, nil
	}
	errs = append(errs, fmt.Errorf("copy: %w", err))
	return nil, errors.Join(errs...)
}

func openXSKMode(ifindex, queue int, mode uint16) (_ *xsk, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket(AF_XDP): %w", err)
	}
	x := &xsk{fd: fd}
	defer func() {
		if err != nil {
			x.close()
		}
	}()
	x.umem, err = unix.Mmap(-1, 0, numFrames*frameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap of the UMEM: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&x.umem[0]))), Len: uint64(len(x.umem)), Size: frameSize}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		if err == unix.ENOBUFS {
			return nil, memlockError(fmt.Errorf("XDP_UMEM_REG: %w", err))
		}
		return nil, fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, opt, ringSize); err != nil {
			return nil, fmt.Errorf("setsockopt(%d) (ring size): %w", opt, err)
		}
	}
	var off unix.XDPMmapOffsets
	size := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
		return nil, fmt.Errorf("XDP_MMAP_OFFSETS: %w", e)
	}
	descSize := uint32(unsafe.Sizeof(unix.XDPDesc{}))
	if x.fill, err = mapRing(fd, off.Fr, ringSize, 8, unix.XDP_UMEM_PGOFF_FILL_RING); err != nil {
		return nil, fmt.Errorf("mmap of the fill ring: %w", err)
	}
	if x.comp, err = mapRing(fd, off.Cr, ringSize, 8, unix.XDP_UMEM_PGOFF_COMPLETION_RING); err != nil {
		return nil, fmt.Errorf("mmap of the completion ring: %w", err)
	}
	if x.rx, err = mapRing(fd, off.Rx, ringSize, descSize, unix.XDP_PGOFF_RX_RING); err != nil {
		return nil, fmt.Errorf("mmap of the RX ring: %w", err)
	}
	if x.tx, err = mapRing(fd, off.Tx, ringSize, descSize, unix.XDP_PGOFF_TX_RING); err != nil {
		return nil, fmt.Errorf("mmap of the TX ring: %w", err)
	}
	// Lend the receive frames to the kernel; keep the others for sending.
	for i := range uint32(rxFrames) {
		*x.fill.addr(i) = uint64(i) * frameSize
	}
	x.fill.submit(rxFrames)
	x.txFree = make([]uint64, 0, numFrames-rxFrames)
	for i := numFrames - 1; i >= rxFrames; i-- {
		x.txFree = append(x.txFree, uint64(i)*frameSize)
	}
	sa := unix.SockaddrXDP{Flags: mode | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	// A socket closed just before on the queue (a transport closed and
	// opened again) holds it until the kernel's deferred release has run.
	for wait := time.Millisecond; ; wait *= 2 {
		err = unix.Bind(fd, &sa)
		if err != unix.EBUSY || wait > time.Second {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		return nil, fmt.Errorf("bind to queue %d: %w", queue, err)
	}
	x.needsWakeup = true
	return x, nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0); e != 0 {
		return e
	}
	return nil
}

// frame is the UMEM bytes of a descriptor.
func (x *xsk) frame(d *unix.XDPDesc) []byte {
	if d.Addr+uint64(d.Len) > uint64(len(x.umem)) {
		return nil
	}
	return x.umem[d.Addr : d.Addr+uint64(d.Len)]
}

// reclaim takes back the TX frames the kernel has finished sending.
func (x *xsk) reclaim() {
	n := x.comp.available()
	if n == 0 {
		return
	}
	c := *x.comp.consumer
	for i := range n {
		x.txFree = append(x.txFree, *x.comp.addr(c + i)&^(frameSize-1))
	}
	x.comp.release(n)
}

// txFrame takes a free TX frame; when none is free it first has the
// kernel send what is queued and takes back what it sent.
func (x *xsk) txFrame() (uint64, bool) {
	if len(x.txFree) == 0 {
		if x.txQueued > 0 {
			x.flushTX()
		} else {
			x.kickTX()
		}
		if len(x.txFree) == 0 {
			return 0, false // every frame in flight: as a full NIC queue would
		}
	}
	addr := x.txFree[len(x.txFree)-1]
	x.txFree = x.txFree[:len(x.txFree)-1]
	return addr, true
}

// queueTX writes the descriptor of a built frame after those queued.
func (x *xsk) queueTX(addr uint64, n int) {
	*x.tx.desc(*x.tx.producer + x.txQueued) = unix.XDPDesc{Addr: addr, Len: uint32(n)}
	x.txQueued++
}

// flushTX submits the queued frames and has the kernel send them.
func (x *xsk) flushTX() {
	if x.txQueued > 0 {
		x.tx.submit(x.txQueued)
		x.txQueued = 0
		x.kickTX()
	}
}

// kickTX asks the kernel to send what the TX ring holds: in copy mode it
// sends only from within this call (up to a budget per call, after which
// it says EAGAIN), in zero-copy mode only when the ring asks for a wakeup.
func (x *xsk) kickTX() {
	for range 64 {
		if x.zeroCopy && !x.tx.needsWakeup() {
			return
		}
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		x.reclaim()
		if x.tx.pending() == 0 || (e != 0 && e != unix.EAGAIN && e != unix.EBUSY && e != unix.ENOBUFS) {
			return
		}
	}
}

// kickFill tells a kernel that ran out of fill entries (and said so in
// the flags) that there are more.
func (x *xsk) kickFill() {
	if x.fill.needsWakeup() {
		unix.Syscall6(unix.SYS_RECVFROM, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

func (x *xsk) close() {
	x.fill.unmap()
	x.comp.unmap()
	x.rx.unmap()
	x.tx.unmap()
	if x.fd >= 0 {
		unix.Close(x.fd)
		x.fd = -1
	}
	if x.umem != nil {
		unix.Munmap(x.umem)
		x.umem = nil
	}
}
