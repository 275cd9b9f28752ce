//go:build linux

package shm

// The hostile peer's side of the handshake, done by hand with raw system
// calls (see hostile_linux_test.go), so that it can misbehave at any step.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

const (
	hostileEnv     = "ERPC_SHM_HOSTILE_SOCKET"
	hostileModeEnv = "ERPC_SHM_HOSTILE_MODE"
)

// say reports to the test process, one line.
func say(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// rawPeer is the hostile side of one connection.
type rawPeer struct {
	sock      int
	memfd     int    // ours, kept open, to misbehave with
	mem       []byte // ours, writable: header and the ring we produce
	peerMemfd int    // the listener's, kept open, to misbehave with
	peerMem   []byte // the listener's, read-only
	ring      int
	addr      netip.AddrPort
	bellRecv  int // our bell, which we may never read
	bellSend  int // the socket we passed to the listener (our copy)
	peerBell  int // the listener's bell socket
	out       producer
	in        consumer
}

type rawOpts struct {
	seals  int              // seals on the memfd (FUTURE_WRITE once mapped); -1: a memfd that cannot be sealed
	bell   int              // descriptor passed as our bell; -1: a proper socket
	before func(p *rawPeer) // runs once the memory is mapped, before the hello
	claim  netip.AddrPort   // the address we claim; zero: a client address of ours
	path   string           // a listening socket we claim, appended to the hello
}

var errRefused = errors.New("refused")

// rawConnect connects a SOCK_SEQPACKET socket to path.
func rawConnect(path string) (int, error) {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	tv := unix.Timeval{Sec: 10}
	unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(s)
		return -1, err
	}
	return s, nil
}

// rawRead reads a listener message: its status, and the descriptors.
func rawRead(s int) (status uint64, fds []int, err error) {
	b := make([]byte, 128)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(s, b, oob, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errRefused, err)
	}
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: end of file", errRefused)
	}
	cms, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for _, cm := range cms {
		f, _ := unix.ParseUnixRights(&cm)
		fds = append(fds, f...)
	}
	if n != helloSize || binary.LittleEndian.Uint64(b) != memMagic {
		return 0, fds, fmt.Errorf("%w: a %d-byte message", errRefused, n)
	}
	return binary.LittleEndian.Uint64(b[8:]), fds, nil
}

func statusText(st uint64) string {
	switch st {
	case statusOK:
		return "ok"
	case statusFull:
		return "full"
	case statusDuplicate:
		return "duplicate"
	}
	return fmt.Sprintf("status %d", st)
}

// rawBell makes a bell: a bound datagram socket and one connected to it.
func rawBell() (recv, send int, err error) {
	if recv, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, -1, err
	}
	if err = unix.Bind(recv, &unix.SockaddrUnix{}); err != nil {
		return -1, -1, err
	}
	sa, err := unix.Getsockname(recv)
	if err != nil {
		return -1, -1, err
	}
	if send, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, -1, err
	}
	return recv, send, unix.Connect(send, sa)
}

// rawDial runs the connector's side of the handshake by hand. It returns
// the listener's answer ("ok", "full", ...), or "refused" and the error if
// the listener hung up.
func rawDial(path string, ring int, o rawOpts) (*rawPeer, string, error) {
	s, err := rawConnect(path)
	if err != nil {
		return nil, "", err
	}
	p := &rawPeer{sock: s, ring: ring, addr: o.claim, memfd: -1, peerMemfd: -1, bellRecv: -1, bellSend: -1, peerBell: -1}
	if !p.addr.IsValid() {
		p.addr = clientAddr()
	}
	st, fds, err := rawRead(s)
	closeAll(fds)
	if err != nil {
		unix.Close(s)
		return nil, "refused", err
	}
	if st != statusOK {
		unix.Close(s)
		return nil, statusText(st), nil
	}
	size := pageSize + ring
	flags := unix.MFD_CLOEXEC
	if o.seals >= 0 {
		flags |= unix.MFD_ALLOW_SEALING
	}
	if p.memfd, err = unix.MemfdCreate("hostile", flags); err != nil {
		return nil, "", err
	}
	if err := unix.Ftruncate(p.memfd, int64(size)); err != nil {
		return nil, "", err
	}
	if seals := o.seals &^ unix.F_SEAL_FUTURE_WRITE; o.seals > 0 && seals != 0 {
		if _, err := unix.FcntlInt(uintptr(p.memfd), unix.F_ADD_SEALS, seals); err != nil {
			return nil, "", err
		}
	}
	if p.mem, err = unix.Mmap(p.memfd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return nil, "", err
	}
	if o.seals > 0 && o.seals&unix.F_SEAL_FUTURE_WRITE != 0 {
		if _, err := unix.FcntlInt(uintptr(p.memfd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); err != nil {
			return nil, "", err
		}
	}
	binary.LittleEndian.PutUint64(p.mem[hdrMagic:], memMagic)
	binary.LittleEndian.PutUint64(p.mem[hdrRing:], uint64(ring))
	bell := o.bell
	if bell < 0 {
		if p.bellRecv, p.bellSend, err = rawBell(); err != nil {
			return nil, "", err
		}
		bell = p.bellSend
	}
	if o.before != nil {
		o.before(p)
	}
	hello := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(hello, memMagic)
	binary.LittleEndian.PutUint64(hello[8:], uint64(ring))
	putAddr(hello[16:], p.addr)
	hello = append(hello, o.path...)
	if err := unix.Sendmsg(s, hello, unix.UnixRights(p.memfd, bell), nil, 0); err != nil {
		return nil, "", err
	}
	st, fds, err = rawRead(s)
	if err != nil || st != statusOK || len(fds) != 2 {
		closeAll(fds)
		unix.Close(s) // p.mem stays mapped: a goroutine of before may write it
		switch {
		case err != nil:
			return nil, "refused", err
		case st == statusOK:
			return nil, "ok", fmt.Errorf("%d descriptors with the reply", len(fds))
		}
		return nil, statusText(st), nil
	}
	p.peerBell, p.peerMemfd = fds[0], fds[1]
	var st2 unix.Stat_t // the listener's ring may be larger than ours (its RingSize)
	if err := unix.Fstat(p.peerMemfd, &st2); err != nil {
		return nil, "ok", err
	}
	peerSize := int(st2.Size)
	if p.peerMem, err = unix.Mmap(p.peerMemfd, 0, peerSize, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		return nil, "ok", fmt.Errorf("mapping the listener's memory: %w", err)
	}
	p.out = newProducer(atomicU64(p.peerMem, hdrHead), p.mem[pageSize:size:size])
	p.in = newConsumer(atomicU64(p.mem, hdrHead), p.peerMem[pageSize:peerSize:peerSize])
	return p, "ok", nil
}

// ringListener rings the listener if it sleeps.
func (p *rawPeer) ringListener() {
	if atomicU64(p.peerMem, hdrSleep).Load() != 0 {
		unix.Sendto(p.peerBell, []byte{1}, unix.MSG_DONTWAIT, nil)
	}
}

// ping sends a datagram to the listener, ringing it if it sleeps, and
// waits up to 5 s for one back.
func (p *rawPeer) ping() bool {
	if !p.out.put([]byte("ping"), nil) {
		return false
	}
	p.ringListener()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Microsecond) {
		if !p.in.pending() {
			continue
		}
		n := 0
		for _, ok := p.in.next(); ok; _, ok = p.in.next() {
			n++
		}
		return p.in.end() == nil && n > 0
	}
	return false
}

// waitEOF reads the socket until the listener closes it.
func (p *rawPeer) waitEOF(d time.Duration) bool {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	unix.SetsockoptTimeval(p.sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	var b [64]byte
	for {
		n, err := unix.Read(p.sock, b[:])
		if n == 0 && err == nil || err == unix.ECONNRESET {
			return true
		}
		if err != nil && err != unix.EINTR {
			return false
		}
	}
}
