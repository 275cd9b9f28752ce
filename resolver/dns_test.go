package resolver

import (
	"errors"
	"net"
	"slices"
	"testing"
	"time"
)

// startScripted builds a dns resolver for target on a fake clock with
// scripted look-ups.
func startScripted(t *testing.T, target string, opts ...DNSOption) (Resolver, *fakeClock, *scriptedLookup, *chanWatcher) {
	t.Helper()
	clk := newFakeClock()
	lk := newScriptedLookup(clk)
	w := newChanWatcher()
	b := NewDNSBuilder(append([]DNSOption{WithDNSClock(clk), WithDNSLookup(lk)}, opts...)...)
	tg, err := Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Build(tg, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, clk, lk, w
}

// TestDNSReportsOnlyChanges: a look-up on every period; an answer equal to
// the last set in another order is not reported, a changed one is.
func TestDNSReportsOnlyChanges(t *testing.T) {
	_, clk, lk, w := startScripted(t, "dns:///db.test:7000")
	answers := [][]string{
		{"10.0.0.1", "10.0.0.2"},
		{"10.0.0.2", "10.0.0.1"}, // same set: silent
		{"10.0.0.1", "10.0.0.2", "fd00::3"},
		{"fd00::3"},
		{"fd00::3"}, // same: silent
	}
	want := [][]string{
		{"10.0.0.1:7000", "10.0.0.2:7000"},
		{"10.0.0.1:7000", "10.0.0.2:7000", "[fd00::3]:7000"},
		{"[fd00::3]:7000"},
	}
	start := clk.Now()
	for i, a := range answers {
		c := lk.next(t)
		if c.name != "db.test" || c.srv {
			t.Fatalf("look-up %d asked %q (srv %v)", i, c.name, c.srv)
		}
		if got := c.at.Sub(start); got != time.Duration(i)*30*time.Second {
			t.Fatalf("look-up %d at %v, want every 30 s", i, got)
		}
		c.answer(a...)
		if d := clk.expectArmed(t); d != 30*time.Second {
			t.Fatalf("after look-up %d the resolver waits %v, want the 30 s period", i, d)
		}
		clk.Advance(30 * time.Second)
	}
	close(w.updates)
	var got [][]string
	for s := range w.updates {
		got = append(got, addrs(s))
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("updates %v, want %v", got, want)
	}
}

// TestDNSBackoffKeepsLastSet: failures are reported (one Error each), the
// retry waits grow from 1 s doubling to the cap, jittered within ±20 %,
// no Update replaces the last good set, and a success resets the backoff.
func TestDNSBackoffKeepsLastSet(t *testing.T) {
	_, clk, lk, w := startScripted(t, "dns:///db.test:7000", WithDNSBackoff(time.Second, 16*time.Second))
	lk.next(t).answer("10.0.0.1")
	w.expectUpdate(t)
	clk.Advance(clk.expectArmed(t))
	bases := []time.Duration{1, 2, 4, 8, 16, 16, 16}
	for round := 0; round < 2; round++ {
		for i, base := range bases {
			lk.next(t).fail(errors.New("SERVFAIL"))
			d := clk.expectArmed(t)
			if lo, hi := base*time.Second*8/10, base*time.Second*12/10; d < lo || d > hi {
				t.Fatalf("round %d failure %d: waits %v, want %v ±20 %%", round, i+1, d, base*time.Second)
			}
			clk.Advance(d)
		}
		lk.next(t).answer("10.0.0.1") // the same set: nothing to report
		if d := clk.expectArmed(t); d != 30*time.Second {
			t.Fatalf("after recovering the resolver waits %v, want the period", d)
		}
		clk.Advance(30 * time.Second)
	}
	if n := len(w.errs); n != 2*len(bases) {
		t.Fatalf("%d errors reported, want one per failure (%d)", n, 2*len(bases))
	}
	if n := len(w.updates); n != 0 {
		t.Fatalf("%d updates during failures, want the last good set kept", n)
	}
}

// TestDNSJitterSpreads: the backoff is really jittered (not one fixed
// value), so clients of one failed server do not retry in step.
func TestDNSJitterSpreads(t *testing.T) {
	r := &dnsResolver{cfg: dnsConfig{backoffBase: time.Second, backoffMax: time.Minute}}
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[r.backoff(3)] = true
	}
	if len(seen) < 10 {
		t.Fatalf("100 backoffs took %d values", len(seen))
	}
}

// TestDNSResolveNowRateLimited: bursts of ResolveNow, during a look-up and
// while waiting, cause one look-up no sooner than 1 s after the last.
func TestDNSResolveNowRateLimited(t *testing.T) {
	r, clk, lk, w := startScripted(t, "dns:///db.test:7000")
	first := lk.next(t)
	for range 100 {
		r.ResolveNow() // while the first look-up is in flight
	}
	first.answer("10.0.0.1")
	w.expectUpdate(t)
	if d := clk.expectArmed(t); d != 30*time.Second {
		t.Fatalf("waits %v, want the period first", d)
	}
	if d := clk.expectArmed(t); d != time.Second {
		t.Fatalf("after ResolveNow waits %v, want the 1 s bound", d)
	}
	clk.Advance(999 * time.Millisecond)
	for range 100 {
		r.ResolveNow()
	}
	if d := clk.expectArmed(t); d != time.Millisecond {
		t.Fatalf("a second burst waits %v, want the 1 ms left", d)
	}
	clk.Advance(time.Millisecond)
	second := lk.next(t)
	// The resolver is in the look-up; each ResolveNow it woke for before
	// re-armed the wait for what was left of the second.
	for len(clk.armed) > 0 {
		if d := <-clk.armed; d != time.Millisecond {
			t.Fatalf("a burst's wake waited %v, want the 1 ms left", d)
		}
	}
	if got := second.at.Sub(first.at); got != time.Second {
		t.Fatalf("second look-up %v after the first, want 1 s", got)
	}
	second.answer("10.0.0.2")
	if got := addrs(w.expectUpdate(t)); !slices.Equal(got, []string{"10.0.0.2:7000"}) {
		t.Fatalf("update %v", got)
	}
	if d := clk.expectArmed(t); d != 30*time.Second {
		t.Fatalf("waits %v, want the period", d)
	}
	// Long after the last look-up, ResolveNow looks up at once.
	clk.Advance(10 * time.Second)
	r.ResolveNow()
	if got := lk.next(t).at.Sub(second.at); got != 10*time.Second {
		t.Fatalf("ResolveNow 10 s after a look-up looked up %v after it", got)
	}
	if n := len(lk.calls); n != 0 {
		t.Fatalf("%d extra look-ups", n)
	}
}

// TestDNSLiteralIP: an IP endpoint is reported without any look-up.
func TestDNSLiteralIP(t *testing.T) {
	for _, target := range []string{"dns:///10.0.0.9:7000", "dns:///[fd00::9]:7000"} {
		r, _, lk, w := startScripted(t, target)
		want := target[len("dns:///"):]
		if got := addrs(w.expectUpdate(t)); !slices.Equal(got, []string{want}) {
			t.Fatalf("%s: update %v", target, got)
		}
		r.ResolveNow()
		r.Close()
		if n := len(lk.calls); n != 0 {
			t.Fatalf("%s: %d look-ups of a literal IP", target, n)
		}
	}
}

// TestDNSSRV: SRV records give each target's addresses with the record's
// port, weight and priority; a target that fails to resolve is left out;
// all failing is an Error.
func TestDNSSRV(t *testing.T) {
	_, clk, lk, w := startScripted(t, "dns:///_erpc._udp.db.test")
	c := lk.next(t)
	if !c.srv || c.name != "_erpc._udp.db.test" {
		t.Fatalf("asked %q srv=%v", c.name, c.srv)
	}
	c.answerSRV(&net.SRV{Target: "a.db.test.", Port: 7001, Priority: 10, Weight: 5},
		&net.SRV{Target: "b.db.test.", Port: 7002, Priority: 20, Weight: 1},
		&net.SRV{Target: "10.0.0.7", Port: 7003})
	a := lk.next(t)
	a.answer("10.0.0.1", "10.0.0.2")
	lk.next(t).fail(errors.New("NXDOMAIN"))
	got := w.expectUpdate(t).Addresses
	want := []Address{
		{Addr: "10.0.0.1:7001", Weight: 5, Attrs: map[string]string{"priority": "10", "srv_target": "a.db.test."}},
		{Addr: "10.0.0.2:7001", Weight: 5, Attrs: map[string]string{"priority": "10", "srv_target": "a.db.test."}},
		{Addr: "10.0.0.7:7003", Attrs: map[string]string{"priority": "0", "srv_target": "10.0.0.7"}},
	}
	if !Equal(got, want) {
		t.Fatalf("SRV set %+v, want %+v", got, want)
	}
	clk.Advance(clk.expectArmed(t))
	lk.next(t).answerSRV(&net.SRV{Target: "b.db.test.", Port: 7002})
	lk.next(t).fail(errors.New("NXDOMAIN"))
	select {
	case err := <-w.errs:
		t.Logf("all targets failing: %v", err)
	case <-time.After(failsafe):
		t.Fatal("no Error when every SRV target failed")
	}
}

func TestParseDNSTarget(t *testing.T) {
	good := map[string]dnsQuery{
		"dns:///db.test:7000":               {host: "db.test", port: "7000"},
		"dns://10.0.0.53/db.test:7000":      {server: "10.0.0.53:53", host: "db.test", port: "7000"},
		"dns://10.0.0.53:5353/db.test:7000": {server: "10.0.0.53:5353", host: "db.test", port: "7000"},
		"dns://[fd00::53]/db.test:7000":     {server: "[fd00::53]:53", host: "db.test", port: "7000"},
		"dns:///_erpc._udp.db.test":         {srv: "_erpc._udp.db.test"},
		"dns:///10.0.0.1:7000":              {literal: "10.0.0.1:7000", host: "10.0.0.1", port: "7000"},
	}
	for s, want := range good {
		tg, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseDNSTarget(tg)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"dns:///db.test", "dns:///:7000", "dns:///db.test:0", "dns:///db.test:70000", "dns:///db.test:x"} {
		tg, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseDNSTarget(tg); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// TestDNSCloseDuringLookup: Close cancels a look-up in flight and returns;
// its answer, had it come, is not reported.
func TestDNSCloseDuringLookup(t *testing.T) {
	r, _, lk, w := startScripted(t, "dns:///db.test:7000")
	c := lk.next(t)
	r.Close() // returns only once the look-up saw its context cancelled
	c.answer("10.0.0.1")
	if len(w.updates)+len(w.errs) != 0 {
		t.Fatal("a report from a closed resolver")
	}
}
