package resolver

import (
	"fmt"
	"net"
	"strings"
	"sync"
)

func init() {
	Register(passthroughBuilder{})
	Register(staticBuilder{})
	Register(NewDNSBuilder())
}

// passthroughBuilder serves targets without a scheme (and udp://, shm://,
// mem://): one address, the target itself; erpc.Dial does any name
// look-up when it dials.
type passthroughBuilder struct{}

func (passthroughBuilder) Scheme() string { return "passthrough" }

func (passthroughBuilder) Build(t Target, w Watcher) (Resolver, error) {
	return startFixed(w, []Address{{Addr: t.Endpoint}}), nil
}

// staticBuilder serves "static:///a:1,b:2": a fixed list of host:port
// entries, each checked when the resolver is built.
type staticBuilder struct{}

func (staticBuilder) Scheme() string { return "static" }

func (staticBuilder) Build(t Target, w Watcher) (Resolver, error) {
	addrs, err := parseStatic(t.Endpoint)
	if err != nil {
		return nil, err
	}
	return startFixed(w, addrs), nil
}

// parseStatic splits a static endpoint, rejecting the first malformed entry
// by name.
func parseStatic(endpoint string) ([]Address, error) {
	var addrs []Address
	for i, entry := range strings.Split(endpoint, ",") {
		host, port, err := net.SplitHostPort(entry)
		if err == nil && host == "" {
			err = fmt.Errorf("empty host")
		}
		if err == nil {
			err = checkPort(port)
		}
		if err != nil {
			return nil, fmt.Errorf("resolver: static target entry %d %q is not host:port: %v", i+1, entry, err)
		}
		addrs = append(addrs, Address{Addr: entry})
	}
	return addrs, nil
}

// checkPort accepts a decimal port 1..65535.
func checkPort(port string) error {
	n := 0
	for _, c := range port {
		if c < '0' || c > '9' || n > 65535 {
			return fmt.Errorf("bad port %q", port)
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// fixedResolver reports one set once, from its own goroutine so that Build
// returns before the Watcher hears anything (a client may hold its own lock
// around Build).
type fixedResolver struct {
	rep  *Reporter
	once sync.Once
}

func startFixed(w Watcher, addrs []Address) *fixedResolver {
	r := &fixedResolver{rep: NewReporter(w)}
	go r.rep.Update(State{Addresses: addrs})
	return r
}

// ResolveNow does nothing: a fixed set has nothing new to learn.
func (r *fixedResolver) ResolveNow() {}

func (r *fixedResolver) Close() { r.once.Do(r.rep.Close) }
