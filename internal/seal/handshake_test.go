package seal

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"testing"
	"time"
)

// quicSide is one end of an in-memory crypto/tls QUIC handshake and the
// secrets it was handed, by level.
type quicSide struct {
	conn        *tls.QUICConn
	read, write [4][]byte
	suite       uint16
	done        bool
}

// drain handles side's events, passing handshake bytes to peer.
func (s *quicSide) drain(t *testing.T, peer *quicSide) {
	t.Helper()
	for {
		e := s.conn.NextEvent()
		switch e.Kind {
		case tls.QUICNoEvent:
			return
		case tls.QUICWriteData:
			if err := peer.conn.HandleData(e.Level, e.Data); err != nil {
				t.Fatal(err)
			}
		case tls.QUICSetReadSecret:
			s.read[e.Level], s.suite = append([]byte(nil), e.Data...), e.Suite
		case tls.QUICSetWriteSecret:
			s.write[e.Level], s.suite = append([]byte(nil), e.Data...), e.Suite
		case tls.QUICTransportParametersRequired:
			s.conn.SetTransportParameters(nil)
		case tls.QUICHandshakeDone:
			s.done = true
		case tls.QUICErrorEvent:
			t.Fatal(e.Err)
		}
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), DNSNames: []string{"erpc.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// TestQUICHandshakeSecrets runs a real TLS 1.3 handshake through
// crypto/tls's QUIC interface and protects packets with the secrets it
// hands out: at the Handshake and Application levels, each side's write
// secret seals what the other side's read secret opens, under the suite
// crypto/tls negotiated.
func TestQUICHandshakeSecrets(t *testing.T) {
	cert, pool := selfSigned(t)
	conf := func(c *tls.Config) *tls.QUICConfig {
		c.MinVersion, c.NextProtos = tls.VersionTLS13, []string{"erpc"}
		return &tls.QUICConfig{TLSConfig: c}
	}
	cli := &quicSide{conn: tls.QUICClient(conf(&tls.Config{ServerName: "erpc.test", RootCAs: pool}))}
	srv := &quicSide{conn: tls.QUICServer(conf(&tls.Config{Certificates: []tls.Certificate{cert}}))}
	cli.conn.SetTransportParameters(nil)
	ctx := context.Background()
	if err := cli.conn.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.conn.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && !(cli.done && srv.done); i++ {
		cli.drain(t, srv)
		srv.drain(t, cli)
	}
	if !cli.done || !srv.done || cli.suite != srv.suite {
		t.Fatalf("handshake: client done %v, server done %v, suites %#x %#x", cli.done, srv.done, cli.suite, srv.suite)
	}
	t.Logf("negotiated %s", tls.CipherSuiteName(cli.suite))
	if err := SuiteSupported(cli.suite); err != nil {
		t.Skipf("crypto/tls chose %s here: %v", tls.CipherSuiteName(cli.suite), err)
	}
	for _, level := range []tls.QUICEncryptionLevel{tls.QUICEncryptionLevelHandshake, tls.QUICEncryptionLevelApplication} {
		ours, err := LevelOf(level)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []struct{ from, to *quicSide }{{cli, srv}, {srv, cli}} {
			s, err := NewSealer(d.from.suite, d.from.write[level], ours)
			if err != nil {
				t.Fatal(err)
			}
			o, err := NewOpener(d.to.suite, d.to.read[level], ours)
			if err != nil {
				t.Fatal(err)
			}
			mustOpen(t, o, s.Seal(nil, 1, payloadFor(0, 100)))
			s.UpdateKey()
			mustOpen(t, o, s.Seal(nil, 1, payloadFor(1, 100)))
		}
	}
}

func TestLevelOf(t *testing.T) {
	for l, want := range map[tls.QUICEncryptionLevel]Level{
		tls.QUICEncryptionLevelInitial:     LevelInitial,
		tls.QUICEncryptionLevelHandshake:   LevelHandshake,
		tls.QUICEncryptionLevelApplication: LevelApplication,
	} {
		if got, err := LevelOf(l); got != want || err != nil {
			t.Errorf("%v: %v %v", l, got, err)
		}
	}
	if _, err := LevelOf(tls.QUICEncryptionLevelEarly); err != ErrEarlyData {
		t.Errorf("early data: %v", err)
	}
	if _, err := LevelOf(9); err != ErrLevel {
		t.Errorf("level 9: %v", err)
	}
}
