package resolver

import (
	"net"
	"slices"
	"testing"
)

// realDNS builds a dns resolver for endpoint asking the test's DNS server
// (dns://127.0.0.1:PORT/endpoint), on the real clock.
func realDNS(t *testing.T, srv *testDNSServer, endpoint string) (Resolver, *chanWatcher) {
	t.Helper()
	w := newChanWatcher()
	tg, err := Parse("dns://" + srv.addr() + "/" + endpoint)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewDNSBuilder(WithDNSMinInterval(0)).Build(tg, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, w
}

// TestDNSRealServer: A and AAAA records from a DNS server the target
// names; after the records change, ResolveNow brings the new set. (No
// period passes: ResolveNow after the change makes the look-up.)
func TestDNSRealServer(t *testing.T) {
	srv := startTestDNSServer(t)
	srv.setIPs("db.test", "127.0.0.1", "::1")
	r, w := realDNS(t, srv, "db.test:7000")
	got := addrs(w.expectUpdate(t))
	slices.Sort(got)
	if want := []string{"127.0.0.1:7000", "[::1]:7000"}; !slices.Equal(got, want) {
		t.Fatalf("first set %v, want %v", got, want)
	}
	srv.setIPs("db.test", "127.0.0.2", "127.0.0.3")
	r.ResolveNow()
	got = addrs(w.expectUpdate(t))
	slices.Sort(got)
	if want := []string{"127.0.0.2:7000", "127.0.0.3:7000"}; !slices.Equal(got, want) {
		t.Fatalf("after the change %v, want %v", got, want)
	}
	if len(w.errs) != 0 {
		t.Fatalf("errors: %v", <-w.errs)
	}
	if srv.queries.Load() < 4 {
		t.Fatalf("the server answered %d queries, want A and AAAA twice", srv.queries.Load())
	}
}

// TestDNSRealServerSRV: SRV records, and their targets' A records, from
// the test's DNS server.
func TestDNSRealServerSRV(t *testing.T) {
	srv := startTestDNSServer(t)
	srv.setIPs("a.db.test", "127.0.0.1")
	srv.setIPs("b.db.test", "127.0.0.2")
	srv.setSRV("_erpc._udp.db.test",
		net.SRV{Target: "a.db.test.", Port: 7001, Priority: 1, Weight: 3},
		net.SRV{Target: "b.db.test.", Port: 7002, Priority: 2, Weight: 1})
	r, w := realDNS(t, srv, "_erpc._udp.db.test")
	want := []Address{
		{Addr: "127.0.0.1:7001", Weight: 3, Attrs: map[string]string{"priority": "1", "srv_target": "a.db.test."}},
		{Addr: "127.0.0.2:7002", Weight: 1, Attrs: map[string]string{"priority": "2", "srv_target": "b.db.test."}},
	}
	if got := w.expectUpdate(t).Addresses; !Equal(got, want) {
		t.Fatalf("set %+v, want %+v", got, want)
	}
	srv.setSRV("_erpc._udp.db.test", net.SRV{Target: "b.db.test.", Port: 7002, Priority: 2, Weight: 1})
	r.ResolveNow()
	if got := w.expectUpdate(t).Addresses; !Equal(got, want[1:]) {
		t.Fatalf("after removing a record %+v, want %+v", got, want[1:])
	}
}
