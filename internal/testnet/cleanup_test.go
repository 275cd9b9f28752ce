//go:build linux

package testnet

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// TestMain sweeps namespaces left by killed runs before the tests and
// fails the run if any of this run's namespaces survive the tests.
func TestMain(m *testing.M) {
	canRun := os.Geteuid() == 0 && hasCaps()
	if canRun {
		if stale, err := RemoveStale(); err == nil && len(stale) > 0 {
			fmt.Printf("testnet: removed %d stale namespaces: %v\n", len(stale), stale)
		}
	}
	code := m.Run()
	if canRun {
		left, err := Leftovers()
		if err != nil {
			fmt.Println("testnet: ip netns list:", err)
		} else if len(left) > 0 {
			fmt.Println("testnet: namespaces left after the tests:", left)
			deleteNamespaces(left...)
			code = 1
		}
	}
	os.Exit(code)
}

// TestCleanup builds one of each testbed in a subtest and checks that
// "ip netns list" has none of them once it ends, and how long it took.
func TestCleanup(t *testing.T) {
	need(t, "ip", "tc", "nft")
	var names []string
	var setup [3]time.Duration
	var built time.Time
	t.Run("build", func(t *testing.T) {
		t0 := time.Now()
		p := NewPair(t)
		setup[0] = time.Since(t0)
		t0 = time.Now()
		s := NewStar(t, StarConfig{Clients: 8, Bottleneck: Shape{Rate: 1e9}, Loss: 0.01})
		setup[1] = time.Since(t0)
		t0 = time.Now()
		tp := NewTwoPath(t, TwoPathConfig{})
		tp.ShapePath(t, 1, Shape{Rate: 1e8, HTB: true})
		setup[2] = time.Since(t0)
		names = append(names, p.A, p.B, s.Switch, s.Server, tp.A, tp.B)
		names = append(names, s.Clients...)
		for _, n := range names {
			if !ourName.MatchString(n) {
				t.Errorf("%s: RemoveStale would not recognise it", n)
			}
		}
		left, err := Leftovers()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !slices.Contains(left, n) {
				t.Errorf("%s is not in ip netns list: %v", n, left)
			}
		}
		built = time.Now()
	})
	teardown := time.Since(built)
	t.Logf("setup: Pair %v, Star with 8 clients, TBF and loss %v, TwoPath with HTB %v; teardown of all %d namespaces %v",
		setup[0], setup[1], setup[2], len(names), teardown)
	left, err := Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if slices.Contains(left, n) {
			t.Errorf("namespace %s left after the test", n)
		}
	}
}
