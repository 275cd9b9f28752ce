//go:build linux

package xdp

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/testnet"
)

const pollCloseEnv = "ERPC_XDP_REVIEW_POLLCLOSE"

// TestReviewPollCloseChild is TestReviewPollCloseRace's child: a
// goroutine busy-polls (Poll) while another Closes, again and again.
func TestReviewPollCloseChild(t *testing.T) {
	arg := os.Getenv(pollCloseEnv)
	if arg == "" {
		t.Skip("run by TestReviewPollCloseRace")
	}
	ifname, addr, _ := strings.Cut(arg, "|")
	var stop atomic.Bool
	var hogs sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 1 { // make the scheduler preempt the poller
		hogs.Go(func() {
			for x := 0; !stop.Load(); x++ {
			}
		})
	}
	defer func() { stop.Store(true); hogs.Wait() }()
	r := rand.New(rand.NewPCG(21, 22))
	bound := time.Now().Add(25 * time.Second)
	i := 0
	for ; i < 400 && time.Now().Before(bound); i++ {
		tr, err := Listen(ifname, netip.MustParseAddrPort(addr), Options{})
		if err != nil {
			t.Fatal(err)
		}
		x := tr.(*Transport)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !x.Poll(1<<20, func() bool { return false }) {
			}
		}()
		time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
		x.Close()
		<-done
	}
	fmt.Printf("RESULT: %d rounds of Poll racing Close, no crash\n", i)
}

// TestReviewPollCloseRace: the transport's doc says Close may come from
// any goroutine and "waits for the loop's call in progress to return
// before unmapping the rings" — but Poll (the busy-polling check) does
// not register as a call in progress: it checks the closed flag, then
// loads the RX ring's producer index. A Close between the two unmaps the
// ring under the load: SIGSEGV, a crash no recover catches. A child
// process (in namespace A) busy-polls while Close comes, 400 times, with
// goroutines that make the scheduler preempt the poller; it must not
// crash.
func TestReviewPollCloseRace(t *testing.T) {
	p := newVethPair(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	var runErr error
	testnet.In(p.A, func() error {
		cmd := exec.Command(exe, "-test.run", "^TestReviewPollCloseChild$", "-test.count=1", "-test.v", "-test.timeout=60s")
		cmd.Env = append(os.Environ(), pollCloseEnv+"="+p.ifname+"|"+netip.AddrPortFrom(p.AddrA, 0).String())
		out, runErr = cmd.CombinedOutput()
		return nil
	})
	s := string(out)
	if runErr != nil {
		i := strings.Index(s, "unexpected fault address")
		if i < 0 {
			i = max(0, strings.Index(s, "SIGSEGV"))
		}
		t.Fatalf("the child died (%v): %.1500s", runErr, s[i:])
	}
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "RESULT") {
			t.Log(strings.TrimSpace(line))
		}
	}
}
