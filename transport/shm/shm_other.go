//go:build !linux

package shm

import (
	"net/netip"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// Transport is the shared-memory transport; on this platform it cannot be
// opened.
type Transport struct{}

var _ transport.Transport = (*Transport)(nil)

// Listen reports ErrNotSupported: the shared-memory transport needs Linux.
func Listen(path string, opts Options) (*Transport, error) {
	return nil, ErrNotSupported
}

// Receive reports ErrNotSupported.
func (t *Transport) Receive(func(netip.AddrPort, []byte)) (int, error) { return 0, ErrNotSupported }

// Send reports ErrNotSupported.
func (t *Transport) Send([]transport.Message) error { return ErrNotSupported }

// Wait reports ErrNotSupported.
func (t *Transport) Wait(time.Time) error { return ErrNotSupported }

// Wake does nothing.
func (t *Transport) Wake() {}

// LocalAddr is the zero address.
func (t *Transport) LocalAddr() netip.AddrPort { return netip.AddrPort{} }

// MaxDatagram is 0.
func (t *Transport) MaxDatagram() int { return 0 }

// PacketSize is 0.
func (t *Transport) PacketSize() int { return 0 }

// Resolve reports ErrNotSupported.
func (t *Transport) Resolve(string) (netip.AddrPort, error) { return netip.AddrPort{}, ErrNotSupported }

// GonePeers returns dst.
func (t *Transport) GonePeers(dst []netip.AddrPort) []netip.AddrPort { return dst }

// Stats is zero.
func (t *Transport) Stats() Stats { return Stats{} }

// Close does nothing.
func (t *Transport) Close() error { return nil }

// Target is "": the transport is not supported here.
func (t *Transport) Target() string { return "" }

// PeerCreds is false: the transport is not supported here.
func (t *Transport) PeerCreds(netip.AddrPort) (pid int32, uid, gid uint32, ok bool) {
	return 0, 0, 0, false
}
