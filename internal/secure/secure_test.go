package secure

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/seal"
)

// selfSigned is a certificate for "server" with extra names, which make
// it as long as a real chain (names of about 60 bytes each).
func selfSigned(t *testing.T, extraNames int) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"server"}
	for i := range extraNames {
		names = append(names, fmt.Sprintf("replica-%04d.%s.example", i, strings.Repeat("x", 40)))
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: names,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// lossyPipe carries datagrams between a client and a server association
// with seeded loss, duplication and reordering, counting each fault.
type lossyPipe struct {
	rng               *mrand.Rand
	loss, dup, reord  float64
	lost, duped, held int
}

// pass returns what of dgrams arrives, in arrival order.
func (p *lossyPipe) pass(dgrams [][]byte) [][]byte {
	var out [][]byte
	for _, d := range dgrams {
		switch r := p.rng.Float64(); {
		case r < p.loss:
			p.lost++
		case r < p.loss+p.dup:
			p.duped++
			out = append(out, d, d)
		default:
			out = append(out, d)
		}
	}
	if len(out) > 1 && p.rng.Float64() < p.reord {
		p.held++
		i, j := p.rng.IntN(len(out)), p.rng.IntN(len(out))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// deliver hands dgrams to a, routing as the endpoint does (by level).
func deliver(t *testing.T, a *Assoc, dgrams [][]byte) (app int) {
	for _, d := range dgrams {
		h, err := seal.ParseHeader(d)
		if err != nil {
			t.Fatalf("a datagram of ours does not parse: %v", err)
		}
		if h.Level == seal.LevelApplication {
			if _, err := a.OpenApp(nil, d); err == nil {
				app++
			}
			continue
		}
		_ = a.Receive(&h, d) // copies and replays are dropped, as they should be
	}
	return app
}

// handshake runs one handshake over p, the client resending its flight
// every round without progress, as the endpoint's connect timer does,
// and sending one Application packet once it can (the connect).
func handshake(t *testing.T, p *lossyPipe, srvCfg, cliCfg *Config) (cli, srv *Assoc, rounds int) {
	t.Helper()
	cli, err := NewClient(cliCfg, 11, 22)
	if err != nil {
		t.Fatal(err)
	}
	toSrv := cli.TakeOutput()
	for rounds = 0; rounds < 500; rounds++ {
		if srv == nil {
			if srv, err = NewServer(srvCfg, 33, 22); err != nil {
				t.Fatal(err)
			}
		}
		deliver(t, srv, p.pass(toSrv))
		toCli := srv.TakeOutput()
		if srv.Established() {
			toCli = append(toCli, srv.SealApp(nil, []byte("connect-ack")))
		}
		app := deliver(t, cli, p.pass(toCli))
		if cli.Err() != nil || srv.Err() != nil {
			t.Fatalf("handshake failed: client %v, server %v", cli.Err(), srv.Err())
		}
		if app > 0 && cli.Confirmed() {
			return cli, srv, rounds
		}
		toSrv = cli.TakeOutput()
		if len(toSrv) == 0 {
			cli.Resend() // the timer: our flight again
			toSrv = cli.TakeOutput()
		}
		if cli.Established() {
			toSrv = append(toSrv, cli.SealApp(nil, []byte("connect")))
		}
	}
	t.Fatalf("no handshake after %d rounds", rounds)
	return
}

// TestHandshakeUnderFaults: for many seeds, a handshake whose server
// certificate spans several datagrams completes over a path that loses,
// duplicates and reorders them, and both ends then exchange sealed
// packets under the keys it produced.
func TestHandshakeUnderFaults(t *testing.T) {
	cert, pool := selfSigned(t, 60) // about 5 KB: a long chain's worth
	if len(cert.Certificate[0]) < 4000 {
		t.Fatalf("certificate of %d bytes: too short to need fragments", len(cert.Certificate[0]))
	}
	srvTLS, err := CheckConfig(&tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	cliTLS, err := CheckConfig(&tls.Config{RootCAs: pool, ServerName: "server"})
	if err != nil {
		t.Fatal(err)
	}
	params := []byte("erpc\x02")
	faults := 0
	for seed := range uint64(40) {
		p := &lossyPipe{rng: mrand.New(mrand.NewPCG(seed, 30)), loss: 0.2, dup: 0.1, reord: 0.5}
		cli, srv, _ := handshake(t, p,
			&Config{TLS: srvTLS, MaxDatagram: 1200, Params: params},
			&Config{TLS: cliTLS, MaxDatagram: 1200, Params: params})
		faults += p.lost + p.duped + p.held
		msg := []byte("a sealed erpc packet")
		got, err := srv.OpenApp(nil, cli.SealApp(nil, msg))
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("seed %d: client to server: %q, %v", seed, got, err)
		}
		if st := cli.ConnectionState(); st.NegotiatedProtocol != ALPN {
			t.Fatalf("ALPN %q", st.NegotiatedProtocol)
		}
		cli.Close()
		srv.Close()
	}
	if faults == 0 {
		t.Fatal("the pipe injected no faults")
	}
}

// TestHandshakeParamsMismatch: peers of different erpc session
// parameters (wire versions) fail the handshake, both saying why.
func TestHandshakeParamsMismatch(t *testing.T) {
	cert, pool := selfSigned(t, 0)
	srvTLS, _ := CheckConfig(&tls.Config{Certificates: []tls.Certificate{cert}})
	cliTLS, _ := CheckConfig(&tls.Config{RootCAs: pool, ServerName: "server"})
	cli, err := NewClient(&Config{TLS: cliTLS, MaxDatagram: 1400, Params: []byte("erpc\x03")}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(&Config{TLS: srvTLS, MaxDatagram: 1400, Params: []byte("erpc\x02")}, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		deliver(t, srv, cli.TakeOutput())
		deliver(t, cli, srv.TakeOutput())
	}
	if srv.Err() == nil || !strings.Contains(srv.Err().Error(), "parameters") {
		t.Fatalf("server: %v, want a parameters mismatch", srv.Err())
	}
	if cli.Err() == nil || !cli.PeerClosed() {
		t.Fatalf("client: %v (closed by peer: %v), want the server's close", cli.Err(), cli.PeerClosed())
	}
}

// TestStreamReassembly: a crypto stream cut into random frames, each
// sent one to three times, in random order, is handed on whole, in order,
// once.
func TestStreamReassembly(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(30, 30))
	for iter := range 500 {
		data := make([]byte, 1+rng.IntN(9000))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		type piece struct {
			off  uint32
			data []byte
		}
		var pieces []piece
		for off := 0; off < len(data); {
			n := 1 + rng.IntN(1500)
			n = min(n, len(data)-off)
			for range 1 + rng.IntN(3) {
				pieces = append(pieces, piece{uint32(off), data[off : off+n]})
			}
			off += n
		}
		rng.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		var s stream
		var got []byte
		for _, p := range pieces {
			ready, _ := s.add(p.off, p.data)
			got = append(got, ready...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("iter %d: %d bytes reassembled of %d", iter, len(got), len(data))
		}
	}
}

// FuzzFrame: a handshake frame's parser takes any bytes without
// panicking, and what it accepts encodes back to the same frame.
func FuzzFrame(f *testing.F) {
	f.Add(appendFrame(nil, &frame{kind: frameCrypto, srcID: 7, offset: 3, data: []byte("hello")}, 0))
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr frame
		if fr.parse(b) != nil {
			return
		}
		var back frame
		if err := back.parse(appendFrame(nil, &fr, 0)); err != nil || back.kind != fr.kind ||
			back.srcID != fr.srcID || back.offset != fr.offset || !bytes.Equal(back.data, fr.data) {
			t.Fatalf("frame %+v did not survive a round trip: %+v, %v", fr, back, err)
		}
	})
}
