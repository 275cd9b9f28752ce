package secure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/erpc-go/erpc/internal/seal"
)

// TestCheckFirstInitial: a client's real first Initial passes; every
// mutation of it (truncated below the padding, one bit flipped, a later
// packet of the flight, random bytes under a valid header) is refused
// without state, with the reason's error.
func TestCheckFirstInitial(t *testing.T) {
	_, pool := selfSigned(t, 0)
	cliTLS, _ := CheckConfig(&tls.Config{RootCAs: pool, ServerName: "server"})
	const maxDatagram = 1400
	cli, err := NewClient(&Config{TLS: cliTLS, MaxDatagram: maxDatagram, Params: []byte("erpc\x02")}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	out := cli.TakeOutput()
	if err := CheckFirstInitial(out[0], maxDatagram); err != nil {
		t.Fatalf("the client's first Initial refused: %v", err)
	}
	if len(out) > 1 { // a ClientHello spanning two packets: the second starts no ClientHello
		if err := CheckFirstInitial(out[1], maxDatagram); !errors.Is(err, ErrNotFirstInitial) {
			t.Fatalf("the flight's second packet: %v, want ErrNotFirstInitial", err)
		}
	}
	if err := CheckFirstInitial(out[0][:MinFirstInitial(maxDatagram)-1], maxDatagram); !errors.Is(err, ErrNotFirstInitial) {
		t.Fatalf("a short Initial: %v, want ErrNotFirstInitial", err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 200 {
		b := append([]byte(nil), out[0]...)
		if i%2 == 0 {
			b[seal.HeaderLen+rng.IntN(len(b)-seal.HeaderLen)] ^= 1 << rng.IntN(8)
		} else {
			for j := seal.HeaderLen; j < len(b); j++ {
				b[j] = byte(rng.Uint32())
			}
		}
		if err := CheckFirstInitial(b, maxDatagram); err == nil {
			t.Fatalf("mutation %d accepted", i)
		}
	}
}

// TestGuardRecoversCallbackPanics: each guarded callback that panics
// returns an error naming it (or, for the session cache, nothing), and
// the panic is reported once.
func TestGuardRecoversCallbackPanics(t *testing.T) {
	var reported []string
	boom := func() { panic("boom") }
	cfg := &tls.Config{
		VerifyPeerCertificate: func([][]byte, [][]*x509.Certificate) error { boom(); return nil },
		VerifyConnection:      func(tls.ConnectionState) error { boom(); return nil },
		GetCertificate:        func(*tls.ClientHelloInfo) (*tls.Certificate, error) { boom(); return nil, nil },
		WrapSession:           func(tls.ConnectionState, *tls.SessionState) ([]byte, error) { boom(); return nil, nil },
		ClientSessionCache:    panicCache{},
	}
	g := Guard(cfg, func(cb string, p any) { reported = append(reported, cb) })
	errs := []error{
		g.VerifyPeerCertificate(nil, nil),
		g.VerifyConnection(tls.ConnectionState{}),
		func() error { _, err := g.GetCertificate(nil); return err }(),
		func() error { _, err := g.WrapSession(tls.ConnectionState{}, nil); return err }(),
	}
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
			t.Fatalf("a panicking callback returned %v", err)
		}
	}
	if _, ok := g.ClientSessionCache.Get("k"); ok {
		t.Fatal("a panicking cache's Get found a session")
	}
	g.ClientSessionCache.Put("k", nil)
	if len(reported) != 6 {
		t.Fatalf("%d panics reported (%v), want 6", len(reported), reported)
	}
}

type panicCache struct{}

func (panicCache) Get(string) (*tls.ClientSessionState, bool) { panic("boom") }
func (panicCache) Put(string, *tls.ClientSessionState)        { panic("boom") }
