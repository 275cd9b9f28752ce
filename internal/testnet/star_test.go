//go:build linux

package testnet

import (
	"math"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// TestStarIncast: four clients each offer 40 Mbit/s to one sink behind a
// 100 Mbit/s bottleneck. The sink gets the shaped rate, and the bottleneck's
// counters show the traffic, the drops and a full queue.
func TestStarIncast(t *testing.T) {
	for _, htb := range []bool{false, true} {
		name := map[bool]string{false: "TBF", true: "HTB"}[htb]
		t.Run(name, func(t *testing.T) { testIncast(t, htb) })
	}
}

func testIncast(t *testing.T, htb bool) {
	const (
		clients  = 4
		rate     = 100e6
		offered  = 40e6 // per client
		payload  = 1200
		warm     = 200 * time.Millisecond
		duration = 1200 * time.Millisecond
		limit    = 64 << 10
	)
	Boost(t)
	t0 := time.Now()
	// A burst of 20 ms of the rate: when the machine is busy the shaper's
	// timer runs late, and tokens beyond the burst would be lost.
	sh := Shape{Rate: rate, Burst: rate / 8 * 0.020, Limit: limit, HTB: htb}
	s := NewStar(t, StarConfig{Clients: clients, Bottleneck: sh})
	t.Logf("setup of %d namespaces: %v", clients+2, time.Since(t0))
	dst := netip.AddrPortFrom(s.ServerAddr, 9000)
	sk := newSink(t, s.Server, dst)
	before := s.Stats(t)

	sm, err := s.Bottleneck().StartSampler(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sent := make([]int, clients)
	for i, c := range s.Clients {
		snd := newSender(t, c, netip.AddrPortFrom(netip.IPv4Unspecified(), 0), dst, false)
		wg.Go(func() {
			n, err := snd.run(dst, payload, offered, duration)
			if err != nil {
				t.Error(err)
			}
			sent[i] = n
		})
	}
	time.Sleep(warm)
	a, _ := sk.snapshot()
	ta := time.Now()
	wg.Wait()
	b, _ := sk.snapshot()
	window := time.Since(ta)
	time.Sleep(50 * time.Millisecond) // let the queue drain
	samples, err := sm.Stop()
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats(t).Sub(before)
	all, _ := sk.snapshot()

	got := mbit(b.wire-a.wire, window)
	total := 0
	for _, n := range sent {
		total += n
	}
	t.Logf("offered %d x %.0f Mbit/s = %d datagrams; sink %.1f Mbit/s (shaped %.0f), %d received in all", clients, offered/1e6, total, got, rate/1e6, all.pkts)
	t.Logf("bottleneck: %v", st)
	if math.Abs(got-rate/1e6) > 0.15*rate/1e6 {
		t.Errorf("sink rate %.1f Mbit/s, want %.0f ± 15 %%", got, rate/1e6)
	}
	if st.Packets < all.pkts {
		t.Errorf("bottleneck sent %d packets, fewer than the %d the sink received", st.Packets, all.pkts)
	}
	if st.Drops == 0 || st.Overlimits == 0 {
		t.Errorf("bottleneck shows no drops (%d) or no overlimits (%d): it is not the bottleneck", st.Drops, st.Overlimits)
	}
	// Everything offered either left the bottleneck or was dropped by it
	// (a few ARP frames aside).
	if acc := st.Packets + st.Drops; math.Abs(float64(acc)-float64(total)) > 0.02*float64(total) {
		t.Errorf("bottleneck sent+dropped %d, clients sent %d", acc, total)
	}

	// The sampler saw the queue stay near full under overload.
	var full, during int
	var maxB uint32
	for _, x := range samples {
		if x.At > warm && x.At < duration {
			during++
			if x.Backlog > limit/2 {
				full++
			}
		}
		maxB = max(maxB, x.Backlog)
	}
	span := samples[len(samples)-1].At
	t.Logf("sampler: %d samples in %v (%.0f/s), max backlog %d B, %d of %d overload samples above half the %d B limit",
		len(samples), span, float64(len(samples))/span.Seconds(), maxB, full, during, limit)
	// One a millisecond when the machine is idle; fewer when other tests
	// take the CPU (the ticker is Go's).
	if float64(len(samples)) < 0.3*span.Seconds()*1000 {
		t.Errorf("sampler: %d samples in %v, want about one a millisecond", len(samples), span)
	}
	if full < during/2 {
		t.Errorf("backlog above %d B in only %d of %d samples under overload", limit/2, full, during)
	}

	// At rest, tc's JSON and the netlink reading agree.
	nl, err := s.Bottleneck().statsNL()
	if err != nil {
		t.Fatal(err)
	}
	tc := s.Stats(t)
	if nl.Packets != tc.Packets || nl.Drops != tc.Drops || nl.Bytes != tc.Bytes || nl.Kind != tc.Kind {
		t.Errorf("netlink %v, tc %v", nl, tc)
	}
}

// TestStarLoss: with 5 % random loss on the port toward the server, about
// 5 % of the datagrams are counted by the nft rule and missing at the sink.
func TestStarLoss(t *testing.T) {
	const (
		loss    = 0.05
		payload = 200
		pps     = 10000 // per client
	)
	s := NewStar(t, StarConfig{Clients: 2, Loss: loss})
	Boost(t)
	dst := netip.AddrPortFrom(s.ServerAddr, 9000)
	sk := newSink(t, s.Server, dst)
	var wg sync.WaitGroup
	sent := make([]int, len(s.Clients))
	for i, c := range s.Clients {
		snd := newSender(t, c, netip.AddrPortFrom(netip.IPv4Unspecified(), 0), dst, false)
		wg.Go(func() {
			n, err := snd.run(dst, payload, pps*(payload+wireOverhead)*8, time.Second)
			if err != nil {
				t.Error(err)
			}
			sent[i] = n
		})
	}
	wg.Wait()
	total := sent[0] + sent[1]
	var got flowCount
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got, _ = sk.snapshot(); got.pkts+s.LossDropped(t) >= uint64(total) {
			break
		}
	}
	dropped := s.LossDropped(t)
	ruleFrac := float64(dropped) / float64(total)
	missing := float64(total-int(got.pkts)) / float64(total)
	t.Logf("sent %d, nft dropped %d (%.2f %%), sink received %d (%.2f %% missing)", total, dropped, 100*ruleFrac, got.pkts, 100*missing)
	if math.Abs(ruleFrac-loss) > 0.01 {
		t.Errorf("nft dropped %.2f %%, want %.0f %% ± 1", 100*ruleFrac, 100*loss)
	}
	if math.Abs(missing-loss) > 0.015 {
		t.Errorf("%.2f %% missing at the sink, want %.0f %% ± 1.5", 100*missing, 100*loss)
	}

	// SetLoss(0) removes the rule.
	s.SetLoss(t, 0)
	if n := s.LossDropped(t); n != 0 {
		t.Errorf("after SetLoss(0): %d dropped", n)
	}
}
