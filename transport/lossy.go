package transport

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"time"
)

// Lossy wraps t so that it drops each datagram it sends with probability p,
// like a lossy network would: the fault injection of eRPC's
// fault_inject_set_pkt_drop_prob, for tests and benchmarks on networks that
// never drop. The optional interfaces of t (Resolve, PeerWatcher,
// PacketSizer) are forwarded.
func Lossy(t Transport, p float64, seed uint64) Transport {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return &lossy{Transport: t, p: p, rng: rand.New(rand.NewChaCha8(s))}
}

type lossy struct {
	Transport
	p    float64
	rng  *rand.Rand
	kept []Message
}

// Send drops each datagram with probability p and sends the rest. It is
// called from one goroutine (the endpoint's loop), so the generator and
// scratch slice need no lock.
func (l *lossy) Send(msgs []Message) error {
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
	if w, ok := l.Transport.(PeerWatcher); ok {
		return w.GonePeers(dst)
	}
	return dst
}

func (l *lossy) PacketSize() int {
	if ps, ok := l.Transport.(PacketSizer); ok {
		return ps.PacketSize()
	}
	return 1472
}

// Wait and the rest come from the embedded transport.
var _ interface{ Wait(time.Time) error } = (*lossy)(nil)
