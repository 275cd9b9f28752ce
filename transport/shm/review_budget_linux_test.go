//go:build linux

package shm

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHostileHugeRecordBudget: a peer (which chooses the ring size, up to
// 1 GiB) publishes one record as large as its ring. The package promises
// that one Receive takes at most 256 KiB of ring from a connection (and
// MaxDatagram says no datagram is larger than 256 KiB); the consumer
// checks only that the record fits in the ring, and the budget is checked
// after each record, so one Receive takes the whole ring and hands the
// engine a datagram of megabytes.
func TestHostileHugeRecordBudget(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	const ring = 64 << 20
	p, st, err := rawDial(path, ring, rawOpts{bell: -1, seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW})
	if p == nil {
		t.Fatalf("hostile handshake: %s %v", st, err)
	}
	defer func() { unix.Close(p.sock); unix.Munmap(p.mem) }()
	// One record at offset 0 spanning the whole ring: header, length, kind,
	// stamp last. The bytes stay zero pages.
	data := p.mem[pageSize : pageSize+ring]
	binary.LittleEndian.PutUint32(data[8:], ring-recHeader)
	binary.LittleEndian.PutUint32(data[12:], recData)
	stampAt(data, 0).Store(1)

	head := atomicU64(p.mem, hdrHead0)
	var largest int
	for turn := 1; turn <= 10 && largest == 0; turn++ {
		tr.Receive(func(from netip.AddrPort, d []byte) { largest = max(largest, len(d)) })
		if took := head.Load(); took > receiveBudget {
			t.Fatalf("turn %d took %d bytes of ring from one peer (budget %d), handing the engine a %d-byte datagram (MaxDatagram %d)",
				turn, took, receiveBudget, largest, tr.MaxDatagram())
		}
	}
	if largest > tr.MaxDatagram() {
		t.Fatalf("a %d-byte datagram passed to the engine (MaxDatagram %d)", largest, tr.MaxDatagram())
	}
}
