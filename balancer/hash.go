package balancer

import (
	"math/rand/v2"
	"slices"
	"sort"
	"sync/atomic"
)

// Ring sizes: vnodesPerWeight points per unit of weight, at most
// maxRingPoints in all (weights scaled down past it, each replica keeping
// at least one point). 160 points keep each replica's share within about
// ±10-20 % of its due.
const (
	vnodesPerWeight = 160
	maxRingPoints   = 1 << 18
)

// Hash returns a consistent-hashing balancer on PickInfo.Key: a hash ring
// with 160 virtual nodes per unit of weight, each placed by hashing the
// replica's address, so the same addresses give the same ring in every
// client. A key goes to the first point at or after its hash. A ring
// rather than rendezvous hashing (a hash per replica per pick: slow at 64
// replicas) or Maglev (O(1), but a change moves a few keys that did not
// have to move): removing a replica moves only the keys it held, adding
// one moves only the keys it takes, and a lookup is a binary search.
// Calls without a key go to a random point, so they spread by weight.
// Update rebuilds the ring; Pick and Done take no lock and do not
// allocate.
func Hash() Balancer { return &hashRing{} }

type hashRing struct {
	ring atomic.Pointer[ring]
}

type ring struct {
	points []uint64 // sorted
	owners []*Replica
}

func (h *hashRing) Update(ready []*Replica) { h.ring.Store(buildRing(ready)) }

func (h *hashRing) Pick(info PickInfo) *Replica {
	rg := h.ring.Load()
	if rg == nil || len(rg.points) == 0 {
		return nil
	}
	var x uint64
	if info.HasKey {
		x = hashString(info.Key)
	} else {
		x = rand.Uint64()
	}
	i, _ := slices.BinarySearch(rg.points, x)
	if i == len(rg.points) {
		i = 0
	}
	return rg.owners[i]
}

func (h *hashRing) Done(r *Replica, d DoneInfo) { observe(r, d) }

type ringPoint struct {
	at    uint64
	owner *Replica
}

func buildRing(rs []*Replica) *ring {
	var total uint64
	for _, r := range rs {
		total += weightOf(r) * vnodesPerWeight
	}
	pts := make([]ringPoint, 0, min(total, maxRingPoints+uint64(len(rs))))
	for _, r := range rs {
		n := weightOf(r) * vnodesPerWeight
		if total > maxRingPoints {
			n = max(1, n*maxRingPoints/total)
		}
		base := hashString(r.Addr)
		for i := range n {
			pts = append(pts, ringPoint{mix64(base + i*0x9e3779b97f4a7c15), r})
		}
	}
	// Ties (improbable) are broken by address so that every client,
	// whatever order its resolver reported, builds the same ring.
	sort.Slice(pts, func(i, j int) bool {
		if pts[i].at != pts[j].at {
			return pts[i].at < pts[j].at
		}
		return pts[i].owner.Addr < pts[j].owner.Addr
	})
	rg := &ring{points: make([]uint64, len(pts)), owners: make([]*Replica, len(pts))}
	for i, p := range pts {
		rg.points[i], rg.owners[i] = p.at, p.owner
	}
	return rg
}

// hashString is 64-bit FNV-1a finished with mix64, whose avalanche spreads
// similar keys ("user:1", "user:2") over the whole ring.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is the splitmix64 finalizer: a bijection on uint64 in which every
// input bit flips about half the output bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
