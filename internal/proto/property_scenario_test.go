package proto

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/erpc-go/erpc/internal/simnet"
)

// scenario is one randomized run: a network, a population of clients and
// sessions, a workload, and the server's behaviour.
type scenario struct {
	seed        uint64
	link        simnet.LinkConfig
	clients     int
	sessions    int     // per client
	calls       int     // per session
	slowHandler float64 // fraction of requests answered later, as by a background worker
	cancel      float64 // fraction of calls the client cancels at a random time
	maxHeld     int     // server's MaxHeldRequests; small values force NACKs
	window      int
	credits     int
	failure     time.Duration // client failure timeout
	paths       int           // client paths; each one's link to the server is slower than the last
	cutAt       Time          // when the network goes down (partition kind)
	cutFor      Time          // and for how long
	lean        bool          // the clients' transport is Reliable (lean kind)
}

func genScenario(seed uint64, kind string) scenario {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	sc := scenario{
		seed: seed,
		link: simnet.LinkConfig{
			Loss:         []float64{0, 0.01, 0.05, 0.1, 0.3}[r.IntN(5)],
			Dup:          []float64{0, 0.05}[r.IntN(2)],
			Reorder:      []float64{0, 0.05, 0.2}[r.IntN(3)],
			Delay:        time.Duration(1+r.IntN(50)) * time.Microsecond,
			Jitter:       time.Duration(r.IntN(30)) * time.Microsecond,
			ReorderDelay: time.Duration(r.IntN(200)) * time.Microsecond,
		},
		clients:     1 + r.IntN(3),
		sessions:    1 + r.IntN(2),
		calls:       5 + r.IntN(25),
		slowHandler: []float64{0, 0.3, 1}[r.IntN(3)],
		maxHeld:     4096,
		window:      []int{1, 2, 8, 8}[r.IntN(4)],
		credits:     []int{1, 4, 32, 32}[r.IntN(4)],
		paths:       []int{1, 1, 2, 4}[r.IntN(4)],
	}
	if r.IntN(4) == 0 {
		sc.link.Bandwidth = float64(50+r.IntN(500)) * 1e6 // 50..550 MB/s
	}
	sc.failure = 5 * time.Second
	switch kind {
	case "partition":
		sc.failure = 200 * time.Millisecond
		sc.cutAt = Time(r.IntN(3000)) * Time(time.Microsecond)
		sc.cutFor = Time(50+r.IntN(550)) * Time(time.Millisecond)
	case "cancel":
		sc.cancel = 0.3
	case "lean":
		// A transport that delivers every datagram once and in order
		// (shared memory): no loss, duplication, reordering or jitter,
		// one path; the clients' sessions take the lean path.
		sc.link.Loss, sc.link.Dup, sc.link.Reorder, sc.link.Jitter = 0, 0, 0, 0
		sc.paths, sc.lean, sc.cancel = 1, true, 0.3
	case "overload":
		sc.slowHandler = 1
		sc.maxHeld = 1 + r.IntN(4)
	}
	return sc
}

// msgSize draws a message size from 0 B to 2 MB, most of them small.
func msgSize(r *rand.Rand, budget *int) int {
	var n int
	switch p := r.IntN(100); {
	case p < 40:
		n = r.IntN(65)
	case p < 65:
		n = 65 + r.IntN(1400)
	case p < 85:
		n = 1433 + r.IntN(16<<10)
	case p < 95:
		n = (16 << 10) + r.IntN(240<<10)
	default:
		n = (256 << 10) + r.IntN((2<<20)-(256<<10)+1)
	}
	if n > *budget {
		n = r.IntN(65)
	}
	*budget -= n
	return n
}

// responseFor is the server's deterministic answer to req: its size and
// bytes follow from a hash of the request, so the client can check both.
func responseFor(req []byte) []byte {
	h := fnv.New64a()
	h.Write(req)
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	budget := 1 << 20
	n := msgSize(r, &budget)
	out := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(out[i:], r.Uint64())
	}
	return out
}

// tagOf reads the unique call tag a test request starts with (if it has room).
func tagOf(req []byte) (uint64, bool) {
	if len(req) < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(req), true
}
