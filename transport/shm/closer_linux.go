//go:build linux

package shm

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Closing a descriptor a peer handed us can block for as long as that peer
// likes: the last close of a unix socket frees the descriptors in flight in
// its queue, and the release of one of them (a TCP socket with SO_LINGER
// and unsent data, say) waits, in the thread that closed the socket, on its
// way back from close(2). The same holds for our end of a connection's
// unix socket, whose queue holds what the peer sent. So no goroutine that
// others wait for (the loop, the accept loop, a watcher, a handshake, Close)
// closes such a descriptor: it hands it to the transport's closer, a
// goroutine that closes them one after the other and exits when none is
// left. A close blocked by a peer may thus outlive Close while that peer
// lingers. The descriptors waiting are counted: past closeBound the accept
// loop stops accepting (connectors wait in the kernel's queue, or are
// refused by it) and a watcher drops a connection whose peer keeps sending
// descriptors, so a stuck closer costs no more than closeBound descriptors.
type closer struct {
	pending atomic.Int32 // descriptors handed over and not closed yet
	mu      sync.Mutex
	fds     []int
	socks   []*net.UnixConn
	running bool
}

// closeBound is how many descriptors may wait for the closer before new
// peers are refused, for a transport of maxPeers.
func closeBound(maxPeers int) int32 { return int32(min(4*maxPeers+256, 1<<20)) }

// fd hands over a raw descriptor; it never blocks.
func (k *closer) fd(fds ...int) {
	if len(fds) == 0 {
		return
	}
	k.pending.Add(int32(len(fds)))
	k.mu.Lock()
	k.fds = append(k.fds, fds...)
	k.start()
	k.mu.Unlock()
}

// sock hands over a socket once nothing else uses it (a Read in progress
// would make the close its own); it never blocks.
func (k *closer) sock(s *net.UnixConn) {
	k.pending.Add(1)
	k.mu.Lock()
	k.socks = append(k.socks, s)
	k.start()
	k.mu.Unlock()
}

// start runs the closer goroutine unless it runs. k.mu is held.
func (k *closer) start() {
	if !k.running {
		k.running = true
		go k.run()
	}
}

func (k *closer) run() {
	for {
		k.mu.Lock()
		fds, socks := k.fds, k.socks
		k.fds, k.socks = nil, nil
		if len(fds)+len(socks) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		for _, fd := range fds {
			unix.Close(fd)
			k.pending.Add(-1)
		}
		for _, s := range socks {
			s.Close()
			k.pending.Add(-1)
		}
	}
}

// shutdown ends both directions of a connection's socket without releasing
// it: the peer sees the end at once, a Read in progress returns, and the
// queue (with any descriptors in it) stays for the closer.
func shutdown(s *net.UnixConn) {
	if rc, err := s.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) })
	}
}

// shutdown shuts the connection's socket down unless the watcher has
// handed it to the closer.
func (c *conn) shutdown() {
	c.sockMu.Lock()
	defer c.sockMu.Unlock()
	if !c.sockGone {
		shutdown(c.sock)
	}
}

// soPassRights is SO_PASSRIGHTS (Linux 6.16): off, the kernel refuses
// (EPERM) to queue descriptors for the socket.
const soPassRights = 83

// useSoPassRights is false in tests that play an older kernel.
var useSoPassRights = true

// refuseRights stops a connection's socket from accepting descriptors,
// where the kernel supports it; elsewhere the watcher drains them into the
// closer.
func refuseRights(s *net.UnixConn) { passRights(s, false) }

// passRights sets SO_PASSRIGHTS on a socket, where the kernel has it.
func passRights(s syscall.Conn, on bool) {
	if !useSoPassRights {
		return
	}
	if rc, err := s.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { setPassRights(int(fd), on) })
	}
}

func setPassRights(fd int, on bool) {
	if useSoPassRights {
		v := 0
		if on {
			v = 1
		}
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, soPassRights, v)
	}
}

// maxRightsOOB holds the most descriptors one message can carry
// (SCM_MAX_FD, 253): a smaller buffer would make the kernel release the
// rest in the reading thread.
var maxRightsOOB = unix.CmsgSpace(4 * 253)

// rightsIn returns the descriptors passed in a control message.
func rightsIn(oob []byte) []int {
	var fds []int
	if cmsgs, err := unix.ParseSocketControlMessage(oob); err == nil {
		for _, m := range cmsgs {
			if f, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	return fds
}
