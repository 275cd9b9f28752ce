//go:build linux && !erpc_portable

package tcp

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// maxIov bounds the iovecs of one writev (the kernel's UIO_MAXIOV is 1024).
const maxIov = 1024

// writeDirect writes as much of run as the socket takes now, with one
// non-blocking writev on the loop (Go's sockets are non-blocking; the
// descriptor comes through RawConn.Control, so a concurrent Close cannot
// hand it to someone else mid-call), and returns how many bytes of the
// framed run went.
func (c *conn) writeDirect(run []transport.Message) (int, error) {
	c.iov, c.heads = c.iov[:0], c.heads[:0]
	for i := range run {
		if len(c.iov)+3 > maxIov {
			break
		}
		m := &run[i]
		n := m.Len()
		if n > MaxDatagram {
			continue
		}
		c.heads = append(c.heads, 0, 0, 0, 0)
		putHead(c.heads[len(c.heads)-frameHead:], n)
		c.iov = append(c.iov, unix.Iovec{})
		if len(m.Head) > 0 {
			c.iov = append(c.iov, unix.Iovec{Base: &m.Head[0]})
			c.iov[len(c.iov)-1].SetLen(len(m.Head))
		}
		if len(m.Payload) > 0 {
			c.iov = append(c.iov, unix.Iovec{Base: &m.Payload[0]})
			c.iov[len(c.iov)-1].SetLen(len(m.Payload))
		}
	}
	// The headers' slice may have moved while it grew: point at it now.
	h := 0
	for i := range c.iov {
		if c.iov[i].Base == nil {
			c.iov[i].Base = &c.heads[h]
			c.iov[i].SetLen(frameHead)
			h += frameHead
		}
	}
	if len(c.iov) == 0 {
		return 0, nil
	}
	c.wrote, c.wErr = 0, nil
	if err := c.rc.Control(c.writeF); err != nil {
		c.wErr = err
	}
	for i := range c.iov { // hold no pointers into the caller's buffers
		c.iov[i] = unix.Iovec{}
	}
	return c.wrote, c.wErr
}

// writeOn is writeDirect's writev on fd.
func (c *conn) writeOn(fd uintptr) {
	for {
		n, _, errno := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&c.iov[0])), uintptr(len(c.iov)))
		switch errno {
		case 0:
			c.wrote = int(n)
		case unix.EINTR:
			continue
		case unix.EAGAIN:
		default:
			c.wErr = errno
		}
		return
	}
}
