package resolver

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// Reporter is what a Resolver reports through: it calls its Watcher from
// one goroutine at a time, drops an Update whose set equals the last one
// reported (in any order), and after Close calls nothing. Resolvers in this
// package and in the contrib modules use it to keep the Watcher's promises
// in one place.
//
// Close waits for a Watcher call in progress, so a Watcher method must not
// call Close on the resolver that called it (it would wait for itself).
type Reporter struct {
	mu       sync.Mutex
	w        Watcher
	closed   bool
	reported bool
	last     []Address // sorted copy of the last set reported
}

// NewReporter returns a Reporter delivering to w.
func NewReporter(w Watcher) *Reporter { return &Reporter{w: w} }

// Update delivers s unless it is the set reported last or the reporter is
// closed, and says whether it delivered.
func (r *Reporter) Update(s State) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (r.reported && Equal(r.last, s.Addresses)) {
		return false
	}
	r.reported = true
	r.last = sortedCopy(s.Addresses)
	r.w.Update(s)
	return true
}

// Error reports err unless the reporter is closed.
func (r *Reporter) Error(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.w.Error(err)
	}
}

// Close stops all further calls; when it returns, no Watcher call is in
// progress and none will be made.
func (r *Reporter) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// Equal says whether two address sets hold the same addresses with the same
// weights, zones and attributes, in any order.
func Equal(a, b []Address) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.EqualFunc(sortedCopy(a), sortedCopy(b), sameAddress)
}

func sameAddress(a, b Address) bool {
	return a.Addr == b.Addr && a.Weight == b.Weight && a.Zone == b.Zone && maps.Equal(a.Attrs, b.Attrs)
}

func sortedCopy(as []Address) []Address {
	c := slices.Clone(as)
	slices.SortFunc(c, func(a, b Address) int {
		if n := strings.Compare(a.Addr, b.Addr); n != 0 {
			return n
		}
		if n := strings.Compare(a.Zone, b.Zone); n != 0 {
			return n
		}
		if n := int(int64(a.Weight) - int64(b.Weight)); n != 0 {
			return n
		}
		return strings.Compare(attrsKey(a.Attrs), attrsKey(b.Attrs))
	})
	return c
}

// attrsKey is a canonical form of attrs, to order addresses that differ
// only in them.
func attrsKey(attrs map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(attrs[k])
		b.WriteByte(0)
	}
	return b.String()
}
