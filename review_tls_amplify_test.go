package erpc_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/seal"
	"github.com/erpc-go/erpc/internal/secure"
	"github.com/erpc-go/erpc/internal/wire"
)

// TestReviewTLSInitialAmplification: an off-path attacker forging a
// victim's source address sends a TLS server Initials of its own making
// (the Initial keys come from an ID it picks): one ClientHello, not
// padded to 1200 bytes (nothing checks a received Initial's size), then
// copies of the same crypto data under new packet numbers. Each copy
// makes the server send its whole first flight again (secure.Receive:
// "a server that sees a copy of the client's flight sends its own
// again"). internal/secure (frame.go) says the 1200-byte padding keeps
// the server's answer to "at most a few times what a forged source
// costs". Here the server's certificate chain is an ordinary one (a leaf
// with 40 names, and its CA); the test measures the bytes the victim's
// socket receives against the bytes sent, and wants at most 3x (QUIC's
// anti-amplification limit, RFC 9000 §8).
//
// Fixed: the server drops an Initial datagram under 1200 bytes that would
// start an association (counted, TLSUnknownAssoc), and sends an address
// it has not validated at most 3x what it received from it. So the test
// runs the attack twice: unpadded, where the fault is asserted by the
// server's count of the dropped Initials (it answers nothing: 0x), and
// padded to 1200 bytes, where the server answers and the ratio must stay
// at most 3x.
func TestReviewTLSInitialAmplification(t *testing.T) {
	for _, c := range []struct {
		name   string
		padded bool
		names  int
	}{{"unpadded", false, 39}, {"padded", true, 39}, {"padded-long-chain", true, 300}} {
		// The long chain's flight (about 20 KB) is many times one padded
		// Initial: the case that needs the 3x limit, not just the padding.
		t.Run(c.name, func(t *testing.T) { reviewAmplification(t, c.padded, c.names) })
	}
}

func reviewAmplification(t *testing.T, padded bool, extraNames int) {
	pki := newTestPKI(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"localhost"}
	for i := range extraNames {
		names = append(names, fmt.Sprintf("replica-%02d.service.internal.example.org", i))
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(99), Subject: pkix.Name{CommonName: "localhost", Organization: []string{"erpc review"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, pki.ca, &key.PublicKey, pki.caKey)
	if err != nil {
		t.Fatal(err)
	}
	chain := tls.Certificate{Certificate: [][]byte{der, pki.ca.Raw}, PrivateKey: key}
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(&tls.Config{Certificates: []tls.Certificate{chain}}))

	// The attacker's ClientHello (X25519 only: a small one), unpadded.
	acfg, err := secure.CheckConfig(&tls.Config{InsecureSkipVerify: true, CurvePreferences: []tls.CurveID{tls.X25519}})
	if err != nil {
		t.Fatal(err)
	}
	const initialID = 0x5eed0fa11
	a, err := secure.NewClient(&secure.Config{TLS: acfg, MaxDatagram: 1472, Params: []byte{'e', 'r', 'p', 'c', wire.Version}}, 0x77, initialID)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	out := a.TakeOutput()
	csec, _ := seal.InitialSecrets(initialID)
	op, _ := seal.NewOpener(seal.InitialSuite, csec, seal.LevelInitial)
	plain, err := op.Open(nil, out[0])
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint16(plain[13:15]))
	frame := plain[:15+n] // the padding dropped
	if padded {
		frame = append(frame, make([]byte, secure.MinFirstInitial(1472)-seal.Overhead-len(frame))...)
	}
	sl, _ := seal.NewSealer(seal.InitialSuite, csec, seal.LevelInitial)

	victim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	to := net.UDPAddrFromAddrPort(sep.Addr())
	sent, got, pkts := 0, 0, 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			_ = victim.SetReadDeadline(time.Now().Add(time.Second))
			k, _, err := victim.ReadFromUDP(buf)
			if err != nil {
				return
			}
			got += k
			pkts++
		}
	}()
	const copies = 20
	for i := range 1 + copies {
		d := sl.Seal(nil, initialID, frame)
		if _, err := victim.WriteToUDP(d, to); err != nil {
			t.Fatal(err)
		}
		sent += len(d)
		time.Sleep(20 * time.Millisecond)
		_ = i
	}
	<-done
	t.Logf("sent %d datagrams, %d bytes (ClientHello datagram %d B); received %d datagrams, %d bytes: %.1fx",
		1+copies, sent, sent/(1+copies), pkts, got, float64(got)/float64(sent))
	if !padded {
		if dropped := sep.Stats().TLSUnknownAssoc; got != 0 || dropped < 1+copies {
			t.Fatalf("unpadded Initials: the server answered %d bytes and counted %d dropped, want 0 and %d", got, dropped, 1+copies)
		}
		return
	}
	if got == 0 {
		t.Fatalf("the server answered nothing: the attack did not happen")
	}
	if got > 3*sent {
		t.Fatalf("a forged source sent %d bytes and the server sent it %d (%.1fx; unpadded Initials are accepted and every copy is answered with the whole flight)",
			sent, got, float64(got)/float64(sent))
	}
}
