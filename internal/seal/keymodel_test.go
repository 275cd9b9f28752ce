package seal

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// keyModel says which genuine packets an Opener must open, from what the
// Opener cannot see: each packet's key generation. A packet opens iff it is
// new, within the window, and of the current generation, the next one
// (which becomes current), or the previous one while its keys are kept
// (until the window's low edge reaches the current generation's lowest
// opened packet number).
type keyModel struct {
	cur, curStart uint64
	prevHeld      bool
	top           uint64
	seen          map[uint64]bool
}

func (m *keyModel) open(gen, pn uint64) bool {
	if m.seen[pn] || pn < m.top && m.top-pn > WindowSize {
		return false
	}
	switch {
	case gen == m.cur:
		m.curStart = min(m.curStart, pn)
	case gen == m.cur+1:
		m.cur, m.curStart, m.prevHeld = gen, pn, true
	case gen+1 == m.cur && m.prevHeld:
	default:
		return false
	}
	m.seen[pn] = true
	m.top = max(m.top, pn+1)
	if m.prevHeld && m.top >= WindowSize && m.top-WindowSize >= m.curStart {
		m.prevHeld = false
	}
	return true
}

// TestKeyUpdateModel: seeded runs with key updates every gap to 2*gap
// packets (some gaps shorter than the reordering), packets lost,
// duplicated and displaced by up to a window and a half; every Open agrees
// with keyModel, every packet the Opener refuses is counted, and the Opener
// ends at the Sealer's generation.
func TestKeyUpdateModel(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 99))
		s, o := pair(t, testSuites[seed%2].id, seed, LevelApplication)
		gap := []int{40, 400, 3000}[seed%3]        // packets between updates, at least
		spread := []int{100, 1000, 6000}[seed/2%3] // displacement, at most
		var pkts [][]byte
		var gens []uint64
		nextUpdate := gap + r.IntN(gap)
		for len(pkts) < 20000 {
			if len(pkts) == nextUpdate {
				s.UpdateKey()
				nextUpdate += gap + r.IntN(gap)
			}
			pkts = append(pkts, s.Seal(nil, 1, payloadFor(s.NextPN(), 8)))
			gens = append(gens, s.Generation())
		}
		type arrival struct{ at, idx int }
		var order []arrival
		for i := range pkts {
			for range r.IntN(3) { // 0 copies: lost; 2: duplicated
				order = append(order, arrival{i + r.IntN(spread), i})
			}
		}
		slices.SortStableFunc(order, func(a, b arrival) int { return a.at - b.at })
		m := &keyModel{seen: map[uint64]bool{}}
		refused := 0
		for _, a := range order {
			want := m.open(gens[a.idx], uint64(a.idx))
			_, err := o.Open(nil, pkts[a.idx])
			if (err == nil) != want {
				t.Fatalf("seed %d: packet %d gen %d (opener gen %d, model gen %d): %v, model opens %v",
					seed, a.idx, gens[a.idx], o.Generation(), m.cur, err, want)
			}
			if err != nil {
				refused++
			}
		}
		// Auth drops are packets two generations ahead of the Opener (when
		// updates come faster than the reordering): refused, never fatal.
		if d := o.Drops(); d.Total() != uint64(refused) || d.BadHeader+d.WrongLevel != 0 || o.Generation() != s.Generation() {
			t.Fatalf("seed %d: %d refused, drops %+v", seed, refused, d)
		}
		t.Logf("seed %d: %d arrivals, %d opened, gen %d/%d, drops %+v", seed, len(order), o.Opened(), o.Generation(), s.Generation(), o.Drops())
	}
}
