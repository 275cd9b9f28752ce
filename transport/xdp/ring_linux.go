//go:build linux

package xdp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one of an AF_XDP socket's four single-producer single-consumer
// rings, mapped from the kernel: a producer and a consumer index (free
// running, masked on use), a flags word (XDP_RING_NEED_WAKEUP), and the
// entries. This process is the producer of the fill and TX rings and the
// consumer of the RX and completion rings; each side reads the other's
// index with an atomic load and publishes its own with an atomic store
// after writing or reading the entries, which orders them.
type ring struct {
	mem      []byte
	producer *uint32
	consumer *uint32
	flags    *uint32
	entries  unsafe.Pointer
	mask     uint32
	size     uint32
}

// mapRing maps the ring of size entries of entrySize bytes at the mmap
// offset pgoff, laid out as off says.
func mapRing(fd int, off unix.XDPRingOffset, size, entrySize uint32, pgoff int64) (*ring, error) {
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+int(size*entrySize),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	base := unsafe.Pointer(&mem[0])
	return &ring{
		mem:      mem,
		producer: (*uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*uint32)(unsafe.Add(base, off.Flags)),
		entries:  unsafe.Add(base, off.Desc),
		mask:     size - 1,
		size:     size,
	}, nil
}

func (r *ring) unmap() {
	if r != nil && r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

// needsWakeup reports whether the kernel asks for a system call before
// it works on the ring again (XDP_USE_NEED_WAKEUP).
func (r *ring) needsWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// Consumer side (RX, completion).

// available is how many entries the kernel has produced that this side
// has not consumed yet.
func (r *ring) available() uint32 {
	return atomic.LoadUint32(r.producer) - *r.consumer
}

// release hands n consumed entries back to the kernel.
func (r *ring) release(n uint32) { atomic.StoreUint32(r.consumer, *r.consumer+n) }

// Producer side (fill, TX).

// submit publishes n produced entries to the kernel.
func (r *ring) submit(n uint32) { atomic.StoreUint32(r.producer, *r.producer+n) }

// pending is how many produced entries the kernel has not consumed yet.
func (r *ring) pending() uint32 { return *r.producer - atomic.LoadUint32(r.consumer) }

// Entries.

// addr is the i-th address of a fill or completion ring (counted from
// the index, not masked).
func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.entries, uintptr(i&r.mask)*8))
}

// desc is the i-th descriptor of an RX or TX ring.
func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.entries, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}
