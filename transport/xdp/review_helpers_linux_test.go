//go:build linux

package xdp

import (
	"bytes"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
	"golang.org/x/sys/unix"
)

// Helpers of the review tests (review_*_test.go).

// rdgram is one received datagram, copied out of the frame.
type rdgram struct {
	from netip.AddrPort
	data []byte
}

// rcollect receives from tr until want datagrams arrived or within has
// passed (a bound for the test, not a measurement).
func rcollect(t testing.TB, tr transport.Transport, want int, within time.Duration) []rdgram {
	t.Helper()
	var got []rdgram
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		if _, err := tr.Receive(func(from netip.AddrPort, data []byte) {
			got = append(got, rdgram{from, bytes.Clone(data)})
		}); err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(got) < want {
			if err := tr.Wait(deadline); err != nil {
				t.Fatalf("wait: %v", err)
			}
		}
	}
	return got
}

// rdrain receives whatever arrives within d.
func rdrain(t testing.TB, tr transport.Transport, d time.Duration) []rdgram {
	t.Helper()
	return rcollect(t, tr, 1<<30, d)
}

// macOf is the MAC of ifname in namespace ns.
func macOf(t testing.TB, ns, ifname string) [6]byte {
	t.Helper()
	var mac [6]byte
	in(t, ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		copy(mac[:], ifc.HardwareAddr)
		return nil
	})
	return mac
}

// rawSock is an AF_PACKET socket on an interface of a namespace, to
// send hand-made Ethernet frames.
type rawSock struct {
	fd      int
	ifindex int
}

func openRaw(t testing.TB, ns, ifname string) *rawSock {
	t.Helper()
	r := &rawSock{fd: -1}
	in(t, ns, func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		r.ifindex = ifc.Index
		r.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // protocol 0: send only
		return err
	})
	t.Cleanup(func() { unix.Close(r.fd) })
	return r
}

func (r *rawSock) send(t testing.TB, frame []byte) {
	t.Helper()
	sa := &unix.SockaddrLinklayer{Ifindex: r.ifindex, Halen: 6}
	copy(sa.Addr[:], frame[0:6])
	if err := unix.Sendto(r.fd, frame, 0, sa); err != nil {
		t.Fatalf("AF_PACKET sendto (%d bytes): %v", len(frame), err)
	}
}

// sh runs a command and fails the test on error.
func sh(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// v4frame builds a valid IPv4 UDP frame from src to dst with payload,
// MACs given.
func v4frame(src, dst [6]byte, from, to netip.AddrPort, payload []byte) []byte {
	buf := make([]byte, headerLen(to.Addr())+len(payload))
	n := buildFrame(buf, macs{src: src, dst: dst}, from, to, nil, payload)
	return buf[:n]
}

// fixIPv4 recomputes an IPv4 frame's header checksum (header of ihl
// bytes at offset 14).
func fixIPv4(f []byte) {
	ihl := int(f[14]&0x0f) * 4
	f[24], f[25] = 0, 0
	c := checksum(f[14:14+ihl], 0)
	f[24], f[25] = byte(c>>8), byte(c)
}
