package slo

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/examples/kv"

	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/openloop"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/proc"
	"github.com/erpc-go/erpc/cmd/erpc-bench/internal/systems"
)

// The slo scenario's servers and clients.
//
// A server process ("serve -system slo") starts idle; its control command
// "start key=value ..." brings up one system's server (erpc with a policy,
// or gRPC) for the sleep or the kv workload and replies with its address
// and the mean service time in nanoseconds that erpc's WithSLO was given;
// "peak" replies with the Go heap's peak since the last "peak" and the
// resident set.
//
// Sleep workload: the request carries the service time to emulate (8
// bytes, little-endian nanoseconds, then padding up to -size); the
// handler waits that long and answers with the time it actually waited (8
// bytes), so the client can tell how faithful the emulation was. erpc runs
// it as a background handler on the endpoint's fixed pool of -workers
// workers. gRPC runs every request on a goroutine of its own, so a plain
// sleeping handler would give it as many workers as requests in flight
// and nothing would ever queue: its handler first takes one of -workers
// tokens from a buffered channel (a semaphore; Go wakes a channel's
// waiters in FIFO order), so it too has that many workers, fed from one
// unbounded FIFO queue, and no NACKs.
//
// kv workload: examples/kv's store, preloaded with -keys keys; erpc
// serves it with inline handlers on the event loop ("inline") or
// background handlers on the workers ("jbsq", "hash"); gRPC with its own
// goroutine per request, no semaphore (an operation takes a microsecond).

const (
	sloMethodWork = "slo.Work"
	grpcSLOWork   = "/erpcbench.SLO/Work"
	grpcSLOGet    = "/erpcbench.SLO/Get"
	grpcSLOSet    = "/erpcbench.SLO/Set"
	sloDeepQueue  = 1 << 16 // -nack=false: a queue that never fills
)

// sloStart is what "start" says.
type sloStart struct {
	system   string // erpc or grpc
	policy   string // inline, jbsq, hash (erpc)
	workload string // sleep or kv
	workers  int
	slo, svc time.Duration // svc: mean service time; 0 for the server to measure
	procs    int           // GOMAXPROCS
	pinned   bool          // the process is pinned to CPU 0: widen to CPUs 0..procs-1
	keys     int
	window   int
	sloQueue bool
	spin     time.Duration
}

func (s sloStart) line() string {
	return fmt.Sprintf("start system=%s policy=%s workload=%s workers=%d slo=%s svc=%s procs=%d pinned=%t keys=%d window=%d sloqueue=%t spin=%s",
		s.system, s.policy, s.workload, s.workers, s.slo, s.svc, s.procs, s.pinned, s.keys, s.window, s.sloQueue, systems.SpinString(s.spin))
}

func parseSLOStart(args []string) (sloStart, error) {
	s := sloStart{spin: systems.SpinDefault}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return s, fmt.Errorf("bad argument %q", a)
		}
		var err error
		switch k {
		case "system":
			s.system = v
		case "policy":
			s.policy = v
		case "workload":
			s.workload = v
		case "workers":
			s.workers, err = strconv.Atoi(v)
		case "slo":
			s.slo, err = time.ParseDuration(v)
		case "svc":
			s.svc, err = time.ParseDuration(v)
		case "procs":
			s.procs, err = strconv.Atoi(v)
		case "pinned":
			s.pinned, err = strconv.ParseBool(v)
		case "keys":
			s.keys, err = strconv.Atoi(v)
		case "window":
			s.window, err = strconv.Atoi(v)
		case "sloqueue":
			s.sloQueue, err = strconv.ParseBool(v)
		case "spin":
			s.spin, err = systems.ParseSpin(v)
		default:
			return s, fmt.Errorf("unknown argument %q", k)
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", k, err)
		}
	}
	return s, nil
}

// sloServer is the server process's side.
type sloServer struct {
	mu       sync.Mutex
	ep       *erpc.Endpoint
	gs       *grpc.Server
	sleepers openloop.SleeperPool
	tokens   chan *openloop.Sleeper // gRPC's workers
	store    *kv.Store
	peak     atomic.Uint64
	stop     chan struct{}
}

func newSLOServer(proc.Config) (proc.Impl, error) { return &sloServer{}, nil }

func (s *sloServer) Addr() string { return "-" }

func (s *sloServer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ep != nil {
		s.ep.Close()
	}
	if s.gs != nil {
		s.gs.Stop()
	}
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
	s.sleepers.Close()
	if s.tokens != nil {
		for range cap(s.tokens) {
			(<-s.tokens).Close()
		}
		s.tokens = nil
	}
}

func (s *sloServer) Control(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch args[0] {
	case "start":
		if s.ep != nil || s.gs != nil {
			return "", errors.New("already started")
		}
		st, err := parseSLOStart(args[1:])
		if err != nil {
			return "", err
		}
		return s.start(st)
	case "peak":
		// The heap's peak since the last "peak", and the resident set now.
		p := s.peak.Swap(0)
		return fmt.Sprintf("%d %d", max(p, heapObjects()), proc.ReadRSS()), nil
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(args, " "))
}

func (s *sloServer) start(st sloStart) (string, error) {
	if st.procs > 0 {
		if st.pinned {
			var set unix.CPUSet
			for c := range min(st.procs, runtime.NumCPU()) {
				set.Set(c)
			}
			if err := setThreadsAffinity(&set); err != nil {
				return "", fmt.Errorf("affinity: %w", err)
			}
		}
		runtime.GOMAXPROCS(st.procs)
	}
	if st.workload == "kv" {
		s.store = kv.NewStore(kv.Config{Capacity: st.keys})
		for i := range st.keys {
			if err := s.store.Set(sloKey(nil, i), sloValue(i, sloPreloadLen(i))); err != nil {
				return "", err
			}
		}
		if st.svc == 0 {
			// WithSLO's mean service time, measured here rather than left
			// to the pool: the pool's running mean can be thrown far
			// above the target by one handler that the kernel
			// descheduled, and then refuses every request, so it never
			// measures again (BENCHMARKS.md, issue 17's section).
			st.svc = s.kvServiceTime()
		}
	}
	s.stop = make(chan struct{})
	go s.watchHeap(s.stop)
	var addr string
	var err error
	switch st.system {
	case "erpc":
		addr, err = s.startErpc(st)
	case "grpc":
		addr, err = s.startGRPC(st)
	default:
		err = fmt.Errorf("unknown system %q", st.system)
	}
	// The reply: the address, and the mean service time WithSLO was given.
	return fmt.Sprintf("%s %d", addr, st.svc), err
}

// kvServiceTime is the mean time of a GET or SET on the store, over a
// few thousand of each.
func (s *sloServer) kvServiceTime() time.Duration {
	const n = 4096
	key, val, buf := make([]byte, kv.KeySize), sloValue(1, 288), make([]byte, 0, kv.MaxValue)
	keys := max(1, s.store.Len())
	t0 := time.Now()
	for i := range n {
		key = sloKey(key, i%keys)
		_ = s.store.Set(key, val)
		_, _ = s.store.Get(key, buf)
	}
	return max(time.Since(t0)/(2*n), time.Nanosecond)
}

// watchHeap keeps the heap's peak (runtime/metrics, no stop-the-world).
func (s *sloServer) watchHeap(stop chan struct{}) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		h := heapObjects()
		for p := s.peak.Load(); h > p && !s.peak.CompareAndSwap(p, h); p = s.peak.Load() {
		}
	}
}

// heapObjects is the memory of the Go heap's objects, live or not yet
// swept.
func heapObjects() uint64 {
	sm := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sm)
	if sm[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sm[0].Value.Uint64()
}

// setThreadsAffinity allows every thread of the process the CPUs of set
// (new threads inherit it from their creator).
func setThreadsAffinity(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return unix.SchedSetaffinity(0, set)
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func init() { proc.Register("slo", newSLOServer) }
