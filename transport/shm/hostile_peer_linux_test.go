//go:build linux

package shm

// The hostile peer process (see hostile_linux_test.go): each mode is one
// way to misbehave against the listener.

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostilePeerHelper is the hostile peer: the test binary re-executed by
// startHostile with hostileEnv set. It reports what it did and saw on
// stdout, one line at a time.
func TestHostilePeerHelper(t *testing.T) {
	path := os.Getenv(hostileEnv)
	if path == "" {
		t.Skip("runs only as the hostile peer process")
	}
	mode, arg, _ := strings.Cut(os.Getenv(hostileModeEnv), ":")
	n, _ := strconv.Atoi(arg)
	sealed := rawOpts{seals: sealsNeeded, bell: -1}
	var keep []*rawPeer // connections stay open until the process ends
	switch mode {
	case "shrink":
		// The memfd carries the seals the listener asks for (and not
		// F_SEAL_SEAL); then we try to shrink it under the listener.
		p, st, err := rawDial(path, minRingSize, sealed)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		keep = append(keep, p)
		say("FTRUNCATE %s", errText(unix.Ftruncate(p.memfd, 0)))
		say("ECHO %v", p.ping())

	case "unsealed":
		// Memfds whose size we could change later, or holes punch in:
		// one that cannot be sealed at all, one sealed against growing
		// only, one against resizing but not against writes.
		for _, o := range []rawOpts{{seals: -1, bell: -1}, {seals: unix.F_SEAL_GROW, bell: -1}, {seals: unix.F_SEAL_SHRINK | unix.F_SEAL_GROW, bell: -1}} {
			p, st, err := rawDial(path, minRingSize, o)
			say("HANDSHAKE %s %s", st, errText(err))
			if p != nil {
				keep = append(keep, p)
				say("FTRUNCATE %s", errText(unix.Ftruncate(p.memfd, 0)))
			}
		}

	case "flipring":
		// The ring size word of the header flips between the size of
		// the hello and a huge one, from before the hello until after
		// a round trip.
		for i := range n {
			var stop atomic.Bool
			var wg sync.WaitGroup
			o := sealed
			o.before = func(p *rawPeer) {
				w := atomicU64(p.mem, hdrRing)
				wg.Go(func() {
					for !stop.Load() {
						w.Store(1 << 40)
						w.Store(uint64(p.ring))
					}
				})
			}
			p, st, err := rawDial(path, minRingSize, o)
			echo := p != nil && p.ping()
			stop.Store(true)
			wg.Wait()
			say("HANDSHAKE %d %s %s ECHO %v", i, st, errText(err), echo)
			if p != nil {
				unix.Close(p.sock)
				unix.Munmap(p.mem)
			}
		}

	case "counters":
		// The head word the listener's producer reads, unaligned and
		// near the end of the area before the hello (the listener's
		// position must not come from it); after a round trip, a record
		// stamped at the listener's position with a kind it must refuse.
		o := sealed
		o.before = func(p *rawPeer) {
			atomicU64(p.mem, hdrHead).Store(uint64(p.ring) - 3)
		}
		p, st, err := rawDial(path, minRingSize, o)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		keep = append(keep, p)
		say("ECHO %v", p.ping())
		off := p.out.pos & p.out.mask
		binary.LittleEndian.PutUint32(p.out.data[off+8:], 1)
		binary.LittleEndian.PutUint32(p.out.data[off+12:], 77)
		stampAt(p.out.data, off).Store(p.out.pos + 1)
		unix.Sendto(p.peerBell, []byte{1}, unix.MSG_DONTWAIT, nil)
		say("DROPPED %v", p.waitEOF(5*time.Second))

	case "badbells":
		// Descriptors that are not unix datagram sockets as our bell:
		// writes to them could block, or go anywhere.
		var pp [2]int
		unix.Pipe2(pp[:], unix.O_CLOEXEC|unix.O_NONBLOCK)
		for {
			if _, err := unix.Write(pp[1], make([]byte, 4096)); err != nil {
				break // the pipe is full
			}
		}
		unix.SetNonblock(pp[1], false)
		efd, _ := unix.Eventfd(0, unix.EFD_CLOEXEC)
		udp, _ := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		seq, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		for _, b := range []struct {
			name string
			fd   int
		}{{"pipe", pp[1]}, {"eventfd", efd}, {"udp", udp}, {"seqpacket", seq}} {
			o := sealed
			o.bell = b.fd
			p, st, err := rawDial(path, minRingSize, o)
			say("HANDSHAKE %s %s %s", b.name, st, errText(err))
			if p != nil {
				keep = append(keep, p)
			}
		}

	case "blockbell":
		// A real datagram socket as our bell, but its queue full, never
		// read, the shared file description blocking and no send
		// timeout; and our sleeping word always set, so the listener
		// rings on every datagram it sends us.
		p, st, err := rawDial(path, minRingSize, sealed)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		// p stays open: the loop at the end of this case never returns.
		unix.SetNonblock(p.bellSend, true)
		k := 0
		for ; unix.Sendto(p.bellSend, []byte{1}, 0, nil) == nil; k++ {
		}
		unix.SetNonblock(p.bellSend, false)
		unix.SetsockoptTimeval(p.bellSend, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{})
		say("FILLED %d", k)
		say("ADDR %v", p.addr)
		w := atomicU64(p.mem, hdrSleep)
		for i := uint64(1); ; i++ {
			w.Store(i) // a new epoch again and again: the listener rings each
		}

	case "clearsleep":
		// The listener's sleeping word of our connection cleared, again
		// and again: it lies in the listener's memory, which we may map
		// only read-only; and our own word, cleared as well.
		p, st, err := rawDial(path, minRingSize, sealed)
		say("HANDSHAKE %s %s", st, errText(err))
		if p == nil {
			return
		}
		keep = append(keep, p)
		_, err = unix.Mmap(p.peerMemfd, 0, pageSize+p.ring, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		say("MAPWRITE %s", errText(err))
		say("MPROTECT %s", errText(unix.Mprotect(p.peerMem, unix.PROT_READ|unix.PROT_WRITE)))
		w := atomicU64(p.mem, hdrSleep)
		go func() {
			for {
				w.Store(0)
			}
		}()
		say("CLEARING")

	case "many":
		// n complete handshakes, kept open.
		for i := range n {
			p, st, err := rawDial(path, minRingSize, sealed)
			say("CONN %d %s %s", i, st, errText(err))
			if p != nil {
				keep = append(keep, p)
			}
		}

	case "halfopen":
		// n connections that read the greeting and send nothing more.
		var wg sync.WaitGroup
		for i := range n {
			s, err := rawConnect(path)
			if err != nil {
				say("CONN %d %v", i, err)
				continue
			}
			st, _, err := rawRead(s)
			say("CONN %d %s %s", i, statusText(st), errText(err))
			if err != nil || st != statusOK {
				continue
			}
			start := time.Now()
			wg.Go(func() {
				p := &rawPeer{sock: s}
				ok := p.waitEOF(30 * time.Second)
				say("CLOSED %d %v %d", i, ok, time.Since(start).Milliseconds())
			})
		}
		wg.Wait()

	default:
		say("MODE %q unknown", mode)
	}
	time.Sleep(time.Minute) // until the test kills us
	runtime.KeepAlive(keep)
}
