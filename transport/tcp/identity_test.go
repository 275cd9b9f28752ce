package tcp_test

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

// claimOf is a claim preface for port with nonce (identity.go's layout:
// the preface with kind 'C', the port, the nonce, a newline).
func claimOf(port uint16, nonce []byte) []byte {
	b := append([]byte("eRPC/tcp\x01C"), byte(port>>8), byte(port))
	b = append(b, nonce...)
	return append(b, '\n')
}

// TestClaimNotProven: a program that claims a listening address it does
// not own (an endpoint's, one nobody listens on, an HTTP server's, the
// acceptor's own) with a nonce of its choosing is not believed: its
// datagrams come from its own source address, the failed check is
// counted (Stats.ClaimFailed), and what the acceptor sends to the real
// endpoint's address reaches the endpoint, never the impostor. Seeded
// rounds pick the claimed address and the nonce.
func TestClaimNotProven(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := uint16(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	webPort := uint16(web.Listener.Addr().(*net.TCPAddr).Port)
	rng := rand.New(rand.NewPCG(5, 17))
	for round := range 12 {
		claimed := []uint16{a.LocalAddr().Port(), closedPort, webPort, b.LocalAddr().Port()}[round%4]
		nonce := make([]byte, 16)
		for i := range nonce {
			nonce[i] = byte(rng.Uint32())
		}
		imp, err := net.Dial("tcp", b.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		msg := append(claimOf(claimed, nonce), 0, 0, 0, 3, 'i', 'm', 'p')
		if _, err := imp.Write(msg); err != nil {
			t.Fatal(err)
		}
		impAddr := netip.MustParseAddrPort(imp.LocalAddr().String())
		var from netip.AddrPort
		until(t, "the impostor's datagram", func() bool {
			n, _ := b.Receive(func(f netip.AddrPort, d []byte) {
				if string(d) == "imp" {
					from = f
				}
			})
			return n > 0
		})
		if from != impAddr {
			t.Fatalf("round %d: claimed port %d: b heard the impostor from %v, want its own address %v", round, claimed, from, impAddr)
		}
		if got := b.Stats().ClaimFailed; got != uint64(round+1) {
			t.Fatalf("round %d: ClaimFailed = %d, want %d", round, got, round+1)
		}
		if claimed == a.LocalAddr().Port() {
			secret := []byte{byte(round)}
			if err := b.Send([]transport.Message{{To: a.LocalAddr(), Head: secret}}); err != nil {
				t.Fatal(err)
			}
			var heard []byte
			until(t, "a to hear b", func() bool {
				b.Receive(func(netip.AddrPort, []byte) {})
				a.Receive(func(_ netip.AddrPort, d []byte) { heard = append(heard, d...) })
				return len(heard) > 0
			})
			if string(heard) != string(secret) {
				t.Fatalf("round %d: a heard %v, want %v", round, heard, secret)
			}
			// The impostor got b's preface and nothing more.
			imp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			got, _ := io.ReadAll(imp)
			if len(got) != 10 {
				t.Fatalf("round %d: the impostor read %d bytes (%q), want b's 10-byte preface only", round, len(got), got)
			}
		}
		imp.Close()
	}
}

// TestTwoAddressesOfOneAcceptor: a listening transport reaches a
// transport that listens on all interfaces at two of its addresses
// (127.0.0.1 and 127.0.0.2). Both connections prove the same claim; the
// second must not replace the first (which would make the dialer take
// the acceptor for gone): it is known by its own source address, and
// what the acceptor sends to each address it heard goes back on the
// connection it came by, so the dialer hears it from the address it
// dialed there. Seeded rounds send back and forth in a random order.
func TestTwoAddressesOfOneAcceptor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 is a loopback address on Linux")
	}
	a, b := listen(t, "127.0.0.1:0"), listen(t, "0.0.0.0:0")
	port := b.LocalAddr().Port()
	to := []netip.AddrPort{
		netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port),
		netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 2}), port),
	}
	heardAs := map[netip.AddrPort]int{} // b: the address it heard each of a's connections from
	rng := rand.New(rand.NewPCG(3, 4))
	var gone []netip.AddrPort
	for round := range 40 {
		k := rng.IntN(2)
		if err := a.Send([]transport.Message{{To: to[k], Head: binary.BigEndian.AppendUint32(nil, uint32(k))}}); err != nil {
			t.Fatal(err)
		}
		var from netip.AddrPort
		until(t, "b to hear a", func() bool {
			a.Receive(func(netip.AddrPort, []byte) {})
			n, _ := b.Receive(func(f netip.AddrPort, d []byte) { from = f })
			return n > 0
		})
		if prev, ok := heardAs[from]; ok && prev != k {
			t.Fatalf("round %d: b heard a's connections to %v and %v both from %v", round, to[prev], to[k], from)
		}
		heardAs[from] = k
		if err := b.Send([]transport.Message{{To: from, Head: []byte("back")}}); err != nil {
			t.Fatal(err)
		}
		var back netip.AddrPort
		until(t, "a to hear b", func() bool {
			b.Receive(func(netip.AddrPort, []byte) {})
			n, _ := a.Receive(func(f netip.AddrPort, _ []byte) { back = f })
			return n > 0
		})
		if back != to[k] {
			t.Fatalf("round %d: a sent to %v and heard the answer from %v", round, to[k], back)
		}
		gone = a.GonePeers(b.GonePeers(gone))
	}
	if len(heardAs) != 2 || len(gone) != 0 {
		t.Fatalf("b heard a from %v (want two addresses); gone peers %v (want none)", heardAs, gone)
	}
	if _, ok := heardAs[a.LocalAddr()]; !ok {
		t.Fatalf("b never heard a from its LocalAddr %v: %v", a.LocalAddr(), heardAs)
	}
}
