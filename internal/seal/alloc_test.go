package seal

import "testing"

// TestSealOpenAllocs: sealing and opening allocate nothing in steady state,
// and neither does dropping a forged packet or a replay.
func TestSealOpenAllocs(t *testing.T) {
	for _, st := range testSuites {
		for _, size := range []int{32, 1440} {
			s, o := pair(t, st.id, 40, LevelApplication)
			pt := payloadFor(0, size)
			pkt := make([]byte, 0, size+Overhead)
			out := make([]byte, 0, size)
			var err error
			n := testing.AllocsPerRun(1000, func() {
				pkt = s.Seal(pkt[:0], 9, pt)
				out, err = o.Open(out[:0], pkt)
			})
			if err != nil || n != 0 {
				t.Fatalf("%s %d B: %v allocs per seal+open, %v", st.name, size, n, err)
			}
			forged := append([]byte(nil), pkt...)
			forged[len(forged)-1] ^= 1
			forged[10]++ // a fresh packet number, so the tag is what fails
			drops := testing.AllocsPerRun(100, func() {
				_, err = o.Open(out[:0], pkt)    // replay
				_, err = o.Open(out[:0], forged) // forgery
			})
			if drops != 0 || o.Drops().Replay == 0 || o.Drops().Auth == 0 {
				t.Fatalf("%s %d B: %v allocs per drop, drops %+v", st.name, size, drops, o.Drops())
			}
		}
	}
}
