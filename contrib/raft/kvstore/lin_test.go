package kvstore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/faults"
)

// Linearizability of the store under faults, checked with porcupine.
//
// Faults: every replica and client endpoint drops LossRate of the datagrams
// it sends (internal/faults; erpc retransmits, so this costs latency
// and, past the failure timeout, indeterminate calls); a nemesis isolates
// the leader (the transport's Drop hook: its raft RPCs fail both ways, while
// clients still reach it), restarts a replica with its stores intact and a
// fresh transport, or heals everything. Operations whose outcome the client
// never learned are recorded as pending forever (Return = MaxInt64), the
// usual convention; failed Gets are dropped.

type kvInput struct {
	op    Op
	key   string
	value string
}

type kvOutput struct {
	value   string
	unknown bool // no answer: the model accepts any outcome
}

var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in, out, s := input.(kvInput), output.(kvOutput), state.(string)
		switch in.op {
		case OpGet:
			return out.unknown || out.value == s, s
		case OpPut:
			return true, in.value
		default: // append returns the new value
			n := s + in.value
			return out.unknown || out.value == n, n
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		switch in.op {
		case OpGet:
			return fmt.Sprintf("get(%s) -> %q", in.key, out.value)
		case OpPut:
			return fmt.Sprintf("put(%s, %q)", in.key, in.value)
		}
		return fmt.Sprintf("append(%s, %q) -> %q", in.key, in.value, out.value)
	},
}

type linConfig struct {
	stale    bool // the broken variant: local reads on any replica
	duration time.Duration
	clients  int
	keys     int
	loss     float64
	nemesis  bool
	isolate  int // with stale: isolate this follower all along (-1: none)
	seed     uint64
	faults   map[string]int // filled in by the nemesis: actions taken
}

// runWorkload runs concurrent clients against a cluster and returns the
// history.
func runWorkload(t *testing.T, lc linConfig) []porcupine.Operation {
	t.Helper()
	rng := rand.New(rand.NewPCG(lc.seed, 1))
	// A short failure timeout so a call to a replica that went away fails
	// (and the client moves on) well within the test.
	opts := []erpc.Option{erpc.WithFailureTimeout(300 * time.Millisecond)}
	c, err := StartCluster(ClusterConfig{Network: "mem", EndpointOptions: opts, PacketLoss: lc.loss, StaleReads: lc.stale})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Leader(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lc.isolate >= 0 {
		c.Faults.Isolate(c.RaftAddr((l + 1) % c.N()))
	}
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	var mu sync.Mutex
	var history []porcupine.Operation
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var clients []*Client
	for ci := range lc.clients {
		copts := opts
		if lc.loss > 0 {
			tr, err := faults.Listen("mem://", lc.loss, lc.seed+uint64(ci))
			if err != nil {
				t.Fatal(err)
			}
			copts = append(slices.Clip(opts), erpc.WithTransport(tr))
		}
		cl, err := NewClient(uint64(ci+1), "mem://", c.APIAddrs(), copts...)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		cl.AttemptTimeout = 200 * time.Millisecond
		cl.ReadAnyReplica = lc.stale
		defer cl.Close()
		crng := rand.New(rand.NewPCG(lc.seed, uint64(ci+2)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				in := kvInput{key: fmt.Sprintf("k%d", crng.IntN(lc.keys))}
				switch p := crng.IntN(10); {
				case p < 4:
					in.op = OpGet
				case p < 8:
					in.op, in.value = OpPut, fmt.Sprintf("c%d.%d", ci, i)
				default:
					in.op, in.value = OpAppend, fmt.Sprintf("[%d.%d]", ci, i)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				call := now()
				res, err := cl.Do(ctx, in.op, []byte(in.key), []byte(in.value))
				ret := now()
				cancel()
				op := porcupine.Operation{ClientId: ci, Input: in, Call: call, Output: kvOutput{value: string(res.Value)}, Return: ret}
				if err != nil {
					if in.op == OpGet {
						continue
					}
					op.Output, op.Return = kvOutput{unknown: true}, math.MaxInt64
				}
				mu.Lock()
				history = append(history, op)
				mu.Unlock()
				// A client whose operation stays pending goes on with the
				// next one: porcupine treats the pending one as concurrent
				// with everything after its call, and the FSM's session
				// table drops it should it still arrive after a newer one.
			}
		}()
	}
	if lc.nemesis {
		// The nemesis cycles through its actions in a seeded random order,
		// so that every run isolates the leader, restarts a replica (the
		// leader itself at times) and heals, whatever the seed.
		actions := []string{"isolate", "restart", "heal", "restart-leader", "heal"}
		deadline := time.Now().Add(lc.duration)
		for step := 0; time.Now().Before(deadline); step++ {
			if step%len(actions) == 0 {
				rng.Shuffle(len(actions), func(i, j int) { actions[i], actions[j] = actions[j], actions[i] })
			}
			time.Sleep(time.Duration(150+rng.IntN(300)) * time.Millisecond)
			switch a := actions[step%len(actions)]; a {
			case "isolate":
				if l, err := c.Leader(time.Second); err == nil {
					t.Logf("nemesis: isolate leader r%d", l)
					c.Faults.Isolate(c.RaftAddr(l))
					lc.faults[a]++
				}
			case "restart", "restart-leader":
				i := rng.IntN(c.N())
				if a == "restart-leader" {
					l, err := c.Leader(time.Second)
					if err != nil {
						continue
					}
					i = l
				}
				t.Logf("nemesis: restart r%d", i)
				if err := c.Restart(i); err != nil {
					t.Errorf("restart r%d: %v", i, err)
				}
				lc.faults[a]++
			case "heal":
				t.Log("nemesis: heal")
				c.Faults.Heal()
				lc.faults[a]++
			}
		}
		c.Faults.Heal()
	} else {
		time.Sleep(lc.duration)
	}
	close(stop)
	wg.Wait()
	if lc.loss > 0 { // the loss happened: the clients' calls were retransmitted
		var n uint64
		for _, cl := range clients {
			n += cl.ep.Stats().Retransmits
		}
		if n == 0 {
			t.Errorf("%v packet loss, and no client retransmitted", lc.loss)
		}
	}
	return history
}

func checkHistory(t *testing.T, h []porcupine.Operation) porcupine.CheckResult {
	res, info := porcupine.CheckOperationsVerbose(kvModel, h, 30*time.Second)
	if res != porcupine.Ok {
		path := filepath.Join(t.TempDir(), "history.html")
		if dir := os.Getenv("KV_PORCUPINE_DIR"); dir != "" {
			path = filepath.Join(dir, t.Name()+".html")
		}
		if err := porcupine.VisualizePath(kvModel, info, path); err == nil {
			t.Logf("porcupine visualization: %s", path)
		}
	}
	return res
}

func countOps(h []porcupine.Operation) (done, pending int) {
	for _, op := range h {
		if op.Return == math.MaxInt64 {
			pending++
		} else {
			done++
		}
	}
	return
}

func TestLinearizableUnderFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	faults := map[string]int{}
	h := runWorkload(t, linConfig{duration: 4 * time.Second, clients: 5, keys: 3, loss: 0.02, nemesis: true, isolate: -1, seed: seed, faults: faults})
	done, pending := countOps(h)
	t.Logf("%d operations completed, %d pending forever; faults %v", done, pending, faults)
	for _, a := range []string{"isolate", "restart", "restart-leader", "heal"} {
		if faults[a] == 0 {
			t.Errorf("the nemesis never did %q", a)
		}
	}
	if done < 50 {
		t.Fatalf("only %d operations completed", done)
	}
	if res := checkHistory(t, h); res != porcupine.Ok {
		t.Fatalf("porcupine: %v (want Ok)", res)
	}
}

// The test of the test: Gets served from any replica's local state are not
// linearizable once a follower lags, and porcupine must say so.
func TestStaleReadsAreCaught(t *testing.T) {
	h := runWorkload(t, linConfig{stale: true, duration: 1500 * time.Millisecond, clients: 4, keys: 2, isolate: 1, seed: 1})
	done, _ := countOps(h)
	t.Logf("%d operations completed", done)
	if res := checkHistory(t, h); res != porcupine.Illegal {
		t.Fatalf("porcupine: %v on the stale-read store (want Illegal)", res)
	}
}
