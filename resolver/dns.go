package resolver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// DNSLookup is the look-up a dns resolver makes; *net.Resolver is one.
// Tests pass a scripted one with WithDNSLookup.
type DNSLookup interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (cname string, addrs []*net.SRV, err error)
}

// DNSOption configures NewDNSBuilder.
type DNSOption func(*dnsConfig)

type dnsConfig struct {
	period, minInterval, backoffBase, backoffMax, timeout time.Duration
	clock                                                 Clock
	lookup                                                DNSLookup
}

// WithDNSPeriod sets how often a name is looked up again while all is
// well (default 30 s; DNS carries no change notifications, so this bounds
// how late a new server is seen).
func WithDNSPeriod(d time.Duration) DNSOption { return func(c *dnsConfig) { c.period = d } }

// WithDNSMinInterval sets the least time between two look-ups of one
// target (default 1 s). ResolveNow is called whenever dials fail, and a
// server restart fails many dials at once; without the bound each would
// send queries to the DNS server, which would answer from the same cache.
func WithDNSMinInterval(d time.Duration) DNSOption {
	return func(c *dnsConfig) { c.minInterval = d }
}

// WithDNSBackoff sets the wait after a failed look-up: base, doubling per
// consecutive failure up to max, each wait jittered by ±20 % so that the
// clients of one failed DNS server do not retry in step (default 1 s up
// to the period).
func WithDNSBackoff(base, max time.Duration) DNSOption {
	return func(c *dnsConfig) { c.backoffBase, c.backoffMax = base, max }
}

// WithDNSTimeout bounds one look-up (default 10 s).
func WithDNSTimeout(d time.Duration) DNSOption { return func(c *dnsConfig) { c.timeout = d } }

// WithDNSClock sets the clock the resolver waits on (tests).
func WithDNSClock(clk Clock) DNSOption { return func(c *dnsConfig) { c.clock = clk } }

// WithDNSLookup makes every target's look-ups go to l, whatever DNS server
// the target names (tests, or a custom resolver).
func WithDNSLookup(l DNSLookup) DNSOption { return func(c *dnsConfig) { c.lookup = l } }

// NewDNSBuilder returns a builder for the "dns" scheme; the one registered
// by default has the default options. Register another to change them:
//
//	resolver.Register(resolver.NewDNSBuilder(resolver.WithDNSPeriod(5 * time.Second)))
//
// Target forms:
//
//	dns:///db.internal:31850            A and AAAA records of db.internal, port 31850
//	dns://10.0.0.53/db.internal:31850   the same, asking the DNS server 10.0.0.53:53
//	dns://10.0.0.53:5353/db.internal:31850
//	dns:///_erpc._udp.db.internal       SRV records: an endpoint without a port
//	                                    whose first label starts with '_'
//	dns:///10.0.0.1:31850               a literal IP: reported once, no look-up
//
// An SRV record's target is looked up (A/AAAA) in turn; each of its
// addresses gets the record's port, Weight, and Attrs "priority" (lower
// is preferred, as in RFC 2782) and "srv_target". A target that fails to
// resolve is left out unless all do.
func NewDNSBuilder(opts ...DNSOption) Builder {
	c := dnsConfig{period: 30 * time.Second, minInterval: time.Second, backoffBase: time.Second, timeout: 10 * time.Second, clock: SystemClock{}}
	for _, o := range opts {
		o(&c)
	}
	if c.backoffMax <= 0 {
		c.backoffMax = c.period
	}
	return &dnsBuilder{cfg: c}
}

type dnsBuilder struct{ cfg dnsConfig }

func (*dnsBuilder) Scheme() string { return "dns" }

func (b *dnsBuilder) Build(t Target, w Watcher) (Resolver, error) {
	q, err := parseDNSTarget(t)
	if err != nil {
		return nil, err
	}
	if q.literal != "" {
		return startFixed(w, []Address{{Addr: q.literal}}), nil
	}
	lookup := b.cfg.lookup
	if lookup == nil {
		lookup = netResolver(q.server)
	}
	return startDNS(b.cfg, q, lookup, w), nil
}

// dnsQuery is what a dns target asks.
type dnsQuery struct {
	server     string // "host:port" of the DNS server, "" for the system's
	host, port string // an A/AAAA look-up
	srv        string // an SRV name, instead
	literal    string // an IP endpoint: no look-up at all
}

func parseDNSTarget(t Target) (dnsQuery, error) {
	var q dnsQuery
	if t.Authority != "" {
		q.server = t.Authority
		if _, _, err := net.SplitHostPort(t.Authority); err != nil {
			host := strings.TrimSuffix(strings.TrimPrefix(t.Authority, "["), "]")
			q.server = net.JoinHostPort(host, "53")
		}
	}
	host, port, err := net.SplitHostPort(t.Endpoint)
	switch {
	case err == nil && host == "":
		return q, fmt.Errorf("resolver: dns target %q names no host", t)
	case err == nil:
		if err := checkPort(port); err != nil {
			return q, fmt.Errorf("resolver: dns target %q: %v", t, err)
		}
		if net.ParseIP(host) != nil {
			q.literal = t.Endpoint
		}
		q.host, q.port = host, port
	case strings.HasPrefix(t.Endpoint, "_") && !strings.Contains(t.Endpoint, ":"):
		q.srv = t.Endpoint
	default:
		return q, fmt.Errorf("resolver: dns target %q needs a port (dns:///name:port) or an SRV name (dns:///_service._udp.name)", t)
	}
	return q, nil
}

// netResolver returns the system's resolver, or one that sends every
// query to server.
func netResolver(server string) DNSLookup {
	if server == "" {
		return net.DefaultResolver
	}
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
}
