//go:build linux && !erpc_portable

package udp

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// receiveBudget bounds the bytes one Receive hands to the engine: the loop
// sends its replies (the peers' credits) only after Receive returns, and
// 128 datagrams of 64 KiB take several milliseconds to copy on a cold
// heap, long enough for a peer's retransmission timer to fire.
const receiveBudget = 256 << 10

// Receive reads batches until the socket is empty or about receiveBudget
// bytes came in (bounded, so a flood cannot starve the loop's timers and
// sends) and passes each datagram to fn, cutting GRO trains back into
// datagrams.
func (t *Transport) Receive(fn func(from netip.AddrPort, data []byte)) (int, error) {
	if t.stashed {
		return t.takeStash(fn), nil // at once, as a lone receive's datagram
	}
	total, bytes, err := t.receiveOn(t.rc, fn, 0, 0)
	for _, pc := range t.paths {
		if err != nil || bytes >= receiveBudget {
			break
		}
		total, bytes, err = t.receiveOn(pc.rc, fn, total, bytes)
	}
	return total, err
}

// receiveOn reads batches from one socket, as Receive describes.
func (t *Transport) receiveOn(rc syscall.RawConn, fn func(from netip.AddrPort, data []byte), total, bytes int) (int, int, error) {
	for range 4 {
		// Ask for as many datagrams as the budget has room for, judging
		// by the size of the last ones; for one only (recvmsg, cheaper
		// than recvmmsg when a datagram is there: see rxBatched) while
		// the socket was last found empty.
		t.rxVlen = batchSize
		if t.rxAvg > 0 {
			t.rxVlen = min(max((receiveBudget-bytes)/t.rxAvg, 1), batchSize)
		}
		single := !t.rxBatched
		if single {
			t.rxVlen = 1
		}
		if err := rc.Control(t.recvFn); err != nil {
			return total, bytes, transport.ErrClosed
		}
		t.rxBatched = t.rxN > 0
		if t.rxN <= 0 {
			// EAGAIN: empty. Anything else (an ICMP error queued on the
			// socket) is the network losing something: not our failure.
			return total, bytes, nil
		}
		got := 0
		for i := range t.rxN {
			total += t.deliver(i, fn)
			got += int(t.rx.hdrs[i].Len)
		}
		bytes += got
		t.rxAvg = max(got/t.rxN, 1)
		t.noteBatch()
		if single || t.rxN < t.rxVlen || bytes >= receiveBudget {
			break // single: the next turn asks for a batch
		}
	}
	return total, bytes, nil
}

// recvBatch reads one batch without blocking (a raw system call, see
// sendBatch).
func (t *Transport) recvBatch(fd uintptr) {
	t.rx.reset(t.rxVlen)
	for {
		var n uintptr
		var errno syscall.Errno
		if t.rxVlen == 1 {
			n, errno = t.recvOne(fd)
		} else {
			n, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&t.rx.hdrs[0])),
				uintptr(t.rxVlen), unix.MSG_DONTWAIT, 0, 0)
		}
		if errno == unix.EINTR {
			continue
		}
		t.rxN, t.rxErr = int(n), errno
		if errno != 0 {
			t.rxN = 0
		}
		return
	}
}

// deliver passes message i of the last batch to fn, one datagram per GRO
// segment.
func (t *Transport) deliver(i int, fn func(netip.AddrPort, []byte)) int {
	h := &t.rx.hdrs[i]
	if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
		return 0 // larger than any datagram we accept
	}
	from := decodeAddr(&t.rx.names[i])
	data := t.rx.data(i)
	seg := t.rx.groSize(i)
	if seg <= 0 || seg >= len(data) {
		fn(from, data)
		return 1
	}
	n := 0
	for len(data) > 0 {
		k := min(seg, len(data))
		fn(from, data[:k:k])
		data = data[k:]
		n++
	}
	return n
}
