package resolver

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Address is one server behind a target.
type Address struct {
	// Addr is what erpc.Dial takes: "10.0.0.1:31850", "[fd00::1]:31850",
	// "host:31850", or a target with a scheme ("shm:///run/x.sock").
	Addr string
	// Weight is the address's relative share of new calls for balancers
	// that weigh (0 counts as 1).
	Weight uint32
	// Zone is the failure domain the address is in ("" when unknown).
	Zone string
	// Attrs carries anything else the resolver learned (labels, the SRV
	// record's priority).
	Attrs map[string]string
}

// State is a target's whole address set at one moment. An update replaces
// the previous set: an address missing from it is gone.
type State struct {
	Addresses []Address
}

// Watcher receives what a Resolver learns. Its methods are called from one
// goroutine at a time and must not block for long.
type Watcher interface {
	// Update delivers the target's current address set.
	Update(State)
	// Error reports a resolution that failed; the previous set stays in
	// use, and the resolver tries again later on its own.
	Error(err error)
}

// Resolver watches one target until Close.
type Resolver interface {
	// ResolveNow asks for a fresh resolution soon; the client calls it
	// when dials to the known addresses fail. It never blocks.
	ResolveNow()
	// Close stops the watch; no Watcher method is called after it returns.
	// It waits for a Watcher call in progress, so a Watcher method must
	// not call Close on the resolver calling it.
	Close()
}

// Builder makes resolvers for one scheme.
type Builder interface {
	// Scheme is the target scheme the builder serves ("dns").
	Scheme() string
	// Build starts watching t and reporting to w. It returns at once;
	// the first update may come later.
	Build(t Target, w Watcher) (Resolver, error)
}

// Target is a parsed target, "scheme://authority/endpoint" as in gRPC's
// naming document: "dns:///db.internal:31850",
// "dns://10.0.0.53/db.internal:31850" (a chosen DNS server),
// "static:///10.0.0.1:31850,10.0.0.2:31850". A target without a scheme
// ("db.internal:31850") has Scheme "passthrough" and Endpoint the whole
// string.
type Target struct {
	Scheme, Authority, Endpoint string
}

func (t Target) String() string {
	if t.Scheme == "passthrough" {
		return t.Endpoint
	}
	return t.Scheme + "://" + t.Authority + "/" + t.Endpoint
}

// ErrNoScheme is returned by Build for a scheme no builder serves.
var ErrNoScheme = errors.New("resolver: no resolver for the target's scheme")

// Parse splits a target. A target without "://", or whose scheme is one of
// the transports erpc.Dial takes directly (udp, shm, mem), is a
// passthrough target.
func Parse(s string) (Target, error) {
	if s == "" {
		return Target{}, errors.New("resolver: empty target")
	}
	scheme, rest, ok := strings.Cut(s, "://")
	switch {
	case !ok, scheme == "udp", scheme == "shm", scheme == "mem":
		return Target{Scheme: "passthrough", Endpoint: s}, nil
	case scheme == "":
		return Target{}, fmt.Errorf("resolver: target %q has an empty scheme", s)
	}
	authority, endpoint, ok := strings.Cut(rest, "/")
	if !ok {
		return Target{}, fmt.Errorf("resolver: target %q lacks the '/' before its endpoint (%s:///name:port)", s, scheme)
	}
	if endpoint == "" {
		return Target{}, fmt.Errorf("resolver: target %q names no endpoint", s)
	}
	return Target{Scheme: scheme, Authority: authority, Endpoint: endpoint}, nil
}

var registry = struct {
	sync.RWMutex
	m map[string]Builder
}{m: map[string]Builder{}}

// Register makes b serve its scheme, replacing any earlier builder for it.
// Contrib modules register from their package's init or by hand.
func Register(b Builder) {
	registry.Lock()
	defer registry.Unlock()
	registry.m[b.Scheme()] = b
}

// Get returns the builder for scheme, or nil.
func Get(scheme string) Builder {
	registry.RLock()
	defer registry.RUnlock()
	return registry.m[scheme]
}

// Build parses target and starts the resolver its scheme names.
func Build(target string, w Watcher) (Resolver, error) {
	t, err := Parse(target)
	if err != nil {
		return nil, err
	}
	b := Get(t.Scheme)
	if b == nil {
		return nil, fmt.Errorf("%w %q (target %q)", ErrNoScheme, t.Scheme, target)
	}
	return b.Build(t, w)
}
