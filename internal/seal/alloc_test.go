package seal

import (
	"fmt"
	"testing"
)

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

// benchSizes are the payloads benchmarked: a small call and a full packet.
var benchSizes = []int{32, 1440}

func BenchmarkSeal(b *testing.B) {
	for _, st := range testSuites {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dB", st.name, size), func(b *testing.B) {
				s, _ := pair(b, st.id, 41, LevelApplication)
				pt := payloadFor(0, size)
				pkt := make([]byte, 0, size+Overhead)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					pkt = s.Seal(pkt[:0], 9, pt)
				}
			})
		}
	}
}

// BenchmarkOpen opens fresh packets (a replay would be dropped early),
// sealed in batches outside the timer.
func BenchmarkOpen(b *testing.B) {
	const batch = 1024
	for _, st := range testSuites {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dB", st.name, size), func(b *testing.B) {
				s, o := pair(b, st.id, 42, LevelApplication)
				pt := payloadFor(0, size)
				pkts := make([][]byte, batch)
				for i := range pkts {
					pkts[i] = make([]byte, 0, size+Overhead)
				}
				out := make([]byte, 0, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				i := batch
				for b.Loop() {
					if i == batch {
						b.StopTimer()
						for j := range pkts {
							pkts[j] = s.Seal(pkts[j][:0], 9, pt)
						}
						i = 0
						b.StartTimer()
					}
					if _, err := o.Open(out[:0], pkts[i]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}
