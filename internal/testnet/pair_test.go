//go:build linux

package testnet

import (
	"math"
	"net/netip"
	"testing"
	"time"
)

// *testing.T and *testing.B are what the builders take in tests.
var (
	_ TB = (*testing.T)(nil)
	_ TB = (*testing.B)(nil)
)

// TestPairLoss: Loss drops about its fraction of the datagrams a namespace
// receives; a second Loss replaces the first (the rates do not add up), as
// does LossOf (for UDP and TCP), and Loss 0 removes the rule.
func TestPairLoss(t *testing.T) {
	const payload, pps = 200, 20000
	p := NewPair(t)
	dst := netip.AddrPortFrom(p.AddrB, 9000)
	sk := newSink(t, p.B, dst)
	snd := newSender(t, p.A, netip.AddrPortFrom(netip.IPv4Unspecified(), 0), dst, false)
	send := func() (sent int, missing float64) {
		t.Helper()
		before, _ := sk.snapshot()
		n, err := snd.run(dst, payload, pps*(payload+wireOverhead)*8, 250*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		var got flowCount
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if got, _ = sk.snapshot(); got.pkts-before.pkts+uint64(p.Dropped(t, p.B)) >= uint64(n) {
				break
			}
		}
		return n, float64(uint64(n)-(got.pkts-before.pkts)) / float64(n)
	}
	for i, loss := range []float64{0.2, 0.05, 0.1} {
		if i < 2 {
			p.Loss(t, p.B, loss)
		} else {
			p.LossOf(t, p.B, loss, "udp", "tcp")
		}
		n, missing := send()
		dropped := p.Dropped(t, p.B)
		t.Logf("loss %v: sent %d, nft dropped %d, %.2f %% missing at the sink", loss, n, dropped, 100*missing)
		if math.Abs(missing-loss) > 0.02 || math.Abs(float64(dropped)/float64(n)-loss) > 0.02 {
			t.Errorf("loss %v: %.2f %% missing, %d of %d dropped by the rule", loss, 100*missing, dropped, n)
		}
	}
	p.Loss(t, p.B, 0)
	if n, missing := send(); missing != 0 || p.Dropped(t, p.B) != 0 {
		t.Errorf("after Loss 0: %.2f %% of %d missing, %d dropped by a rule", 100*missing, n, p.Dropped(t, p.B))
	}
}
