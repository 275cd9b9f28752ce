package balancer

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestRetryBudgetBound drives a budget with random traffic (bursts and
// lulls, retries wanted at random rates, clock steps of random size) and
// checks, for every retry granted, the bound over the window the budget
// claims: retries ≤ 0.1 × calls + 10/s × 10 s over the ten one-second
// periods ending with the retry's. It also checks that the budget is
// not simply stingy: under sustained demand it grants close to the bound.
func TestRetryBudgetBound(t *testing.T) {
	for seed := range uint64(30) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		b := NewRetryBudget(RetryBudgetConfig{})
		calls := map[int64]int{}   // per second
		retries := map[int64]int{} // per second
		windowSum := func(m map[int64]int, sec int64) (n int) {
			for s := sec - 9; s <= sec; s++ {
				n += m[s]
			}
			return n
		}
		now := t0
		wantP := rnd.Float64()
		granted, wanted := 0, 0
		for range 20000 {
			switch k := rnd.IntN(100); {
			case k < 2:
				now = now.Add(time.Duration(rnd.IntN(5000)) * time.Millisecond)
				wantP = rnd.Float64()
			case k < 60:
				now = now.Add(time.Duration(rnd.IntN(2000)) * time.Microsecond)
			}
			sec := now.Unix()
			b.Deposit(now)
			calls[sec]++
			if rnd.Float64() < wantP {
				wanted++
				if b.Withdraw(now) {
					granted++
					retries[sec]++
					if r, c := windowSum(retries, sec), windowSum(calls, sec); float64(r) > 0.1*float64(c)+100 {
						t.Fatalf("seed %d: %d retries over %d calls in 10 s", seed, r, c)
					}
				}
			}
		}
		if granted == 0 || granted == wanted && wanted > 3000 {
			t.Fatalf("seed %d: granted %d of %d retries wanted", seed, granted, wanted)
		}
	}
	// Sustained demand: 1000 calls/s for 60 s, a retry wanted per call.
	b := NewRetryBudget(RetryBudgetConfig{})
	granted := 0
	for i := range 60000 {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		b.Deposit(now)
		if b.Withdraw(now) {
			granted++
		}
	}
	// Per 10 s window: 0.1 × 10000 + 100 = 1100, i.e. 110/s, 6600 in 60 s.
	if granted < 6000 || granted > 6600 {
		t.Fatalf("sustained: granted %d retries in 60 s, want about 6600", granted)
	}
}

// TestRetryBudgetIdleFloor: a client without calls still gets the floor
// (10/s over 10 s), and only that, and it comes back as the window slides.
func TestRetryBudgetIdleFloor(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{})
	n := 0
	for b.Withdraw(t0) {
		n++
	}
	if n != 100 {
		t.Fatalf("idle budget granted %d, want 100", n)
	}
	if b.Withdraw(t0.Add(9 * time.Second)) {
		t.Fatal("granted again inside the window")
	}
	if !b.Withdraw(t0.Add(10 * time.Second)) {
		t.Fatal("not granted once the window slid past")
	}
}

// TestRetryBudgetConcurrent: goroutines deposit and withdraw at once on
// one clock period (run it under -race); withdrawals never exceed the
// bound, and no deposit is lost.
func TestRetryBudgetConcurrent(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{MinPerSecond: -1}) // no floor
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5000 {
				b.Deposit(t0)
				if b.Withdraw(t0) {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if granted > 4000 {
		t.Fatalf("granted %d retries for 40000 calls", granted)
	}
	if got := b.deposits[b.period(t0)%budgetBuckets].Load() & (1<<32 - 1); got != 40000 {
		t.Fatalf("%d deposits counted of 40000", got)
	}
	if granted < 3900 {
		t.Fatalf("granted only %d of the 4000 the calls allow", granted)
	}
}

func TestRetryBudgetDepositAllocs(t *testing.T) {
	b := NewRetryBudget(RetryBudgetConfig{})
	if a := testing.AllocsPerRun(1000, func() { b.Deposit(t0) }); a != 0 {
		t.Fatalf("%.1f allocs per Deposit", a)
	}
}
