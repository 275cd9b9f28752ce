package balancer

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTwoDistinctExactLaw: for random weight vectors (skewed ones, with a
// replica holding nearly all the weight, and zeros counting as 1), the
// pair P2C draws follows the exact law: the first by weight, the second by
// weight among the others, P(i, j) = w_i/T × w_j/(T - w_i). Each pair's
// frequency over 200000 draws must lie within 6 standard deviations (plus
// a small floor) of its due. (The draws use math/rand/v2's global source,
// so a run of the correct code fails with probability about 1e-6.)
func TestTwoDistinctExactLaw(t *testing.T) {
	rnd := rand.New(rand.NewPCG(31, 7))
	const draws = 200000
	for trial := range 12 {
		n := 2 + rnd.IntN(5)
		ws := make([]uint32, n)
		for i := range ws {
			ws[i] = []uint32{0, 1, 2, 3, 7, 100, 1000}[rnd.IntN(7)]
		}
		if trial == 0 {
			ws, n = []uint32{100, 1, 1, 1}, 4 // the reviewer's case
		}
		s := newReplicaSet(newReplicas(n, ws...))
		if s.cum == nil {
			continue // equal weights: the uniform path
		}
		got := make([][]int, n)
		for i := range got {
			got[i] = make([]int, n)
		}
		for range draws {
			i, j := s.twoDistinct()
			if i == j {
				t.Fatalf("weights %v: drew %d twice", ws, i)
			}
			got[i][j]++
		}
		total := float64(s.total)
		for i := range n {
			wi := float64(weightOf(s.replicas[i]))
			for j := range n {
				if i == j {
					continue
				}
				p := wi / total * float64(weightOf(s.replicas[j])) / (total - wi)
				due := p * draws
				sd := math.Sqrt(draws * p * (1 - p))
				if d := math.Abs(float64(got[i][j]) - due); d > 6*sd+3 {
					t.Errorf("weights %v: pair (%d,%d) drawn %d times, due %.1f (sd %.1f)", ws, i, j, got[i][j], due, sd)
				}
			}
		}
	}
}
