//go:build linux

package shm

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// A connection's memory: each side creates its own and maps its peer's
// read-only (the layout, and why the seals, at the top of conn_linux.go).

// createShared makes our memfd of a connection: pageSize+ring bytes,
// sealed against resizing, mapped writable, then sealed against every
// later write (mapping, write(2), hole punching) but through that mapping;
// the header holds the magic and ring.
func createShared(ring int) (int, []byte, error) {
	size := pageSize + ring
	fd, err := unix.MemfdCreate("erpc-shm", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: ftruncate: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: seal: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: mmap: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE|unix.F_SEAL_SEAL); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: seal: %w", err)
	}
	binary.LittleEndian.PutUint64(mem[hdrMagic:], memMagic)
	binary.LittleEndian.PutUint64(mem[hdrRing:], uint64(ring))
	return fd, mem, nil
}

// sealsNeeded are the seals a peer's memfd must carry before we map it.
const sealsNeeded = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_FUTURE_WRITE

// mapPeer maps, read-only, a peer's memfd of a connection, which must be
// pageSize+ring bytes and sealed so that its size cannot change (a
// mapping beyond the end of a file faults with SIGBUS) and nobody can
// punch holes in it (a fault waits for a punch in progress): see the
// comment at the top. The seals are checked first: F_GET_SEALS succeeds
// only on a memfd (no file system is called), and seals once set stay,
// so the size checked after them holds for good. The header's magic and
// ring size are checked, each read once.
func mapPeer(fd, ring int) ([]byte, error) {
	size := pageSize + ring
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: peer's shared memory is not a memfd: %w", err)
	}
	if seals&sealsNeeded != sealsNeeded {
		return nil, fmt.Errorf("shm: peer's shared memory is not sealed against resizing and writes (seals %#x)", seals)
	}
	// A sealed file is on tmpfs or hugetlbfs; hugetlbfs pages can run out
	// at fault time (SIGBUS again).
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return nil, fmt.Errorf("shm: fstatfs: %w", err)
	}
	if fs.Type != unix.TMPFS_MAGIC {
		return nil, fmt.Errorf("shm: peer's shared memory is on file system %#x, not tmpfs", fs.Type)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(size) {
		return nil, fmt.Errorf("shm: peer's shared memory is %d bytes, want %d", st.Size, size)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap: %w", err)
	}
	// Each word read once: the peer may change them at any time.
	magic, r := binary.LittleEndian.Uint64(mem[hdrMagic:]), binary.LittleEndian.Uint64(mem[hdrRing:])
	if magic != memMagic || r != uint64(ring) {
		unix.Munmap(mem)
		return nil, errHandshake
	}
	return mem, nil
}
