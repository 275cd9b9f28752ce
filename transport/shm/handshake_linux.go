//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// The handshake's messages (conn_linux.go describes the exchange): every
// byte in them comes from a process that may be hostile, so each parser
// checks sizes and values and returns claims only, for the caller to judge
// (fuzz_linux_test.go).

func putAddr(b []byte, a netip.AddrPort) {
	a16 := a.Addr().As16()
	copy(b, a16[:])
	binary.LittleEndian.PutUint16(b[16:], a.Port())
}

func getAddr(b []byte) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), binary.LittleEndian.Uint16(b[16:]))
}

var errHandshake = errors.New("shm: bad handshake from peer")

// readMsg reads one handshake message and the descriptors passed with it,
// at most maxFDs (on error all go to the closer). The control buffer holds
// as many as a message can carry, so the kernel releases none in this
// goroutine (closer_linux.go). A message is helloSize bytes, a hello up to
// maxSockPath more.
func readMsg(s *net.UnixConn, maxFDs int, k *closer) ([]byte, []int, error) {
	b := make([]byte, helloSize+maxSockPath+1) // one more: a longer one shows as too long
	oob := make([]byte, maxRightsOOB)
	n, oobn, _, _, err := s.ReadMsgUnix(b, oob)
	fds := rightsIn(oob[:oobn])
	if err != nil {
		k.fd(fds...)
		return nil, nil, fmt.Errorf("shm: handshake: %w", err)
	}
	if n < helloSize || n > helloSize+maxSockPath || len(fds) > maxFDs || binary.LittleEndian.Uint64(b) != memMagic {
		k.fd(fds...)
		return nil, nil, errHandshake
	}
	return b[:n], fds, nil
}

// parseHello checks a connector's hello (magic, ring size, address, the
// path of a listening socket or nothing) and returns its ring size and the
// address and path it claims: claims only, see connectorAddr.
func parseHello(b []byte) (ring int, claim netip.AddrPort, sock string, err error) {
	if len(b) < helloSize || len(b) > helloSize+maxSockPath || binary.LittleEndian.Uint64(b) != memMagic {
		return 0, claim, "", errHandshake
	}
	r := binary.LittleEndian.Uint64(b[8:])
	if r < minRingSize || r > maxRingSize || r&(r-1) != 0 {
		return 0, claim, "", errHandshake
	}
	return int(r), getAddr(b[16:]), string(b[helloSize:]), nil
}

// parseReply checks a listener's greeting or reply (magic, status,
// address) and returns its status and address.
func parseReply(b []byte) (status uint64, peer netip.AddrPort, err error) {
	if len(b) != helloSize || binary.LittleEndian.Uint64(b) != memMagic {
		return 0, peer, errHandshake
	}
	status = binary.LittleEndian.Uint64(b[8:])
	if status != statusOK && status != statusDuplicate && status != statusFull {
		return 0, peer, errHandshake
	}
	return status, getAddr(b[16:]), nil
}

// listenerMsg is a greeting or reply: magic, status, an address (ours in
// the greeting, the connector's as we know it in the reply).
func listenerMsg(status uint64, addr netip.AddrPort) []byte {
	b := make([]byte, helloSize)
	binary.LittleEndian.PutUint64(b, memMagic)
	binary.LittleEndian.PutUint64(b[8:], status)
	putAddr(b[16:], addr)
	return b
}
