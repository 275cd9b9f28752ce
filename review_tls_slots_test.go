package erpc_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
)

// TestReviewTLSGarbageInitialsLockOut: an off-path attacker who cannot
// read anything sends 1024 datagrams of 60 random bytes that merely start
// like a protected Initial (0xE9, level 0, a random destination ID). No
// key, no ClientHello: none of them opens. Each is dropped and counted
// (asserted: the fault happened), yet each one made a server association
// before it was opened (tls_layer.go, tlsAccept runs before the packet is
// authenticated), and 1024 of them fill every handshake slot
// (maxHandshakes) until the handshake timeout (4 x FailureTimeout, 8 s)
// sweeps them. Meanwhile a real client cannot connect. Promise: "a
// protected packet that fails to open is dropped, never answered";
// README: "a connect flood from forged sources does not lock real
// clients out"; threat model: an off-path attacker who forges sources.
func TestReviewTLSGarbageInitialsLockOut(t *testing.T) {
	pki := newTestPKI(t)
	sep := listenT(t, serverWith(t, "Echo", echoHandler), "127.0.0.1:0", erpc.WithTLS(pki.serverTLS()))
	cep := listenT(t, nil, "127.0.0.1:0", erpc.WithTLS(pki.clientTLS()))

	// Control: a real client connects before the flood.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s0, err := cep.Dial(ctx, sep.Addr().String())
	cancel()
	if err != nil {
		t.Fatalf("control dial: %v", err)
	}
	s0.Close()
	before := sep.Stats()

	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := net.UDPAddrFromAddrPort(sep.Addr())
	rng := rand.New(rand.NewPCG(30, 1024))
	const forged = 1024
	for i := range forged {
		b := make([]byte, 60)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		b[0], b[1] = 0xE9, 0x00                          // protected, Initial, phase 0
		binary.LittleEndian.PutUint64(b[10:], uint64(i)) // a valid packet number
		if _, err := conn.WriteToUDP(b, to); err != nil {
			t.Fatal(err)
		}
		if i%64 == 63 {
			time.Sleep(time.Millisecond) // let the loop keep up: nothing is lost to the socket buffer
		}
	}
	floodAt := time.Now()
	dropped := func() uint64 {
		st := sep.Stats()
		return st.TLSOpenFailures + st.TLSUnknownAssoc + st.TLSReplays - before.TLSOpenFailures - before.TLSUnknownAssoc - before.TLSReplays
	}
	waitFor(t, "every forged Initial to be dropped and counted", func() bool { return dropped() >= forged })
	t.Logf("server dropped %d of %d forged Initials (open failures %d, unknown %d)",
		dropped(), forged, sep.Stats().TLSOpenFailures, sep.Stats().TLSUnknownAssoc)

	// A real client, with a deadline far above a loopback handshake.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	s, err := cep.Dial(ctx, sep.Addr().String())
	cancel()
	if err == nil {
		s.Close()
		return
	}
	// How long the lock-out lasts (bounded).
	locked := time.Duration(-1)
	for time.Since(floodAt) < 20*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		s, err2 := cep.Dial(ctx, sep.Addr().String())
		cancel()
		if err2 == nil {
			s.Close()
			locked = time.Since(floodAt)
			break
		}
	}
	t.Fatalf("after %d garbage 60-byte Initials from one socket (no key, no ClientHello; all dropped), a real client's dial failed: %v; "+
		"it connected again %v after the flood (-1: not within 20 s), so one such burst every ~8 s locks every client out",
		forged, err, locked.Round(100*time.Millisecond))
}
