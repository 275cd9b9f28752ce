package erpc_test

import (
	"encoding/binary"
	"net/netip"
	"os"
	"syscall"
	"testing"
)

// spoofer sends UDP datagrams with any IPv4 source address and port, as an
// attacker on the path (or a host that forges its source) would: a raw
// socket with the IP header written by hand. It needs root.
type spoofer struct{ fd int }

func newSpoofer(t *testing.T) *spoofer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("forging source addresses needs a raw socket: run as root")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		t.Skipf("raw socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return &spoofer{fd: fd}
}

// send delivers payload to dst as if from src. The kernel fills in the IP
// checksum and identification; a zero UDP checksum means none (IPv4).
func (s *spoofer) send(src, dst netip.AddrPort, payload []byte) error {
	pkt := make([]byte, 28+len(payload))
	pkt[0] = 0x45 // IPv4, 20-byte header
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8] = 64 // TTL
	pkt[9] = syscall.IPPROTO_UDP
	s4, d4 := src.Addr().Unmap().As4(), dst.Addr().Unmap().As4()
	copy(pkt[12:16], s4[:])
	copy(pkt[16:20], d4[:])
	binary.BigEndian.PutUint16(pkt[20:], src.Port())
	binary.BigEndian.PutUint16(pkt[22:], dst.Port())
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload)))
	copy(pkt[28:], payload)
	return syscall.Sendto(s.fd, pkt, 0, &syscall.SockaddrInet4{Addr: d4})
}
