// Package faults injects faults into transports, for tests and benchmarks
// of loss recovery on networks that never drop (eRPC's fault injection).
// It is internal: production code has no use for it, and the public API
// offers none.
package faults

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"

	"github.com/erpc-go/erpc/transport"
)

// Lossy wraps t so that it drops each datagram it sends with probability p,
// like a lossy network would: the fault injection of eRPC's
// fault_inject_set_pkt_drop_prob. The optional interfaces of t (Resolve,
// PeerWatcher, PacketSizer) are forwarded.
func Lossy(t transport.Transport, p float64, seed uint64) transport.Transport {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return &lossy{Transport: t, p: p, rng: rand.New(rand.NewChaCha8(s))}
}

type lossy struct {
	transport.Transport
	p    float64
	rng  *rand.Rand
	kept []transport.Message
}

// Send drops each datagram with probability p and sends the rest. It is
// called from one goroutine (the endpoint's loop), so the generator and
// scratch slice need no lock.
func (l *lossy) Send(msgs []transport.Message) error {
	kept := l.kept[:0]
	for _, m := range msgs {
		if l.rng.Float64() >= l.p {
			kept = append(kept, m)
		}
	}
	err := l.Transport.Send(kept)
	clear(kept)
	l.kept = kept[:0]
	return err
}

func (l *lossy) Resolve(addr string) (netip.AddrPort, error) {
	if r, ok := l.Transport.(interface {
		Resolve(string) (netip.AddrPort, error)
	}); ok {
		return r.Resolve(addr)
	}
	return netip.ParseAddrPort(addr)
}

func (l *lossy) GonePeers(dst []netip.AddrPort) []netip.AddrPort {
	if w, ok := l.Transport.(transport.PeerWatcher); ok {
		return w.GonePeers(dst)
	}
	return dst
}

func (l *lossy) Target() string {
	if t, ok := l.Transport.(transport.Targeter); ok {
		return t.Target()
	}
	return ""
}

func (l *lossy) Paths() int {
	if p, ok := l.Transport.(transport.Pather); ok {
		return p.Paths()
	}
	return 1
}

func (l *lossy) PacketSize() int {
	if ps, ok := l.Transport.(transport.PacketSizer); ok {
		return ps.PacketSize()
	}
	return 1472
}
