//go:build linux

package tcp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/internal/testnet"
)

const clientEnv = "ERPC_TCP_HELPER_TARGET"

// TestHelperClient is the client process of TestHalfOpen: the test binary
// re-executed in a network namespace with clientEnv set to the server's
// target. It calls Echo every 20 ms, prints UP after the first success,
// and on the first failure prints FAIL, the error and how long after the
// last success it came, then exits.
func TestHelperClient(t *testing.T) {
	target := os.Getenv(clientEnv)
	if target == "" {
		t.Skip("runs only as the client process of TestHalfOpen")
	}
	cli, err := erpc.Listen("tcp://", erpc.WithFailureTimeout(time.Second), erpc.Insecure()) // a test namespace: plaintext on purpose
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.Dial(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	for i := 0; time.Since(last) < 30*time.Second; i++ {
		_, err := s.Call(context.Background(), "Echo", make([]byte, 4096), nil)
		if err != nil {
			fmt.Printf("FAIL %v after %v: %v\n", errors.Is(err, erpc.ErrUnavailable), time.Since(last).Round(time.Millisecond), err)
			return
		}
		if i == 0 {
			fmt.Println("UP")
		}
		last = time.Now()
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("FAIL never")
}

// TestHalfOpen: the client's packets stop reaching the server (nftables
// drops every TCP packet entering the server's namespace: no FIN, no
// reset, the connection stays open on both sides, as when a host
// vanishes), and the failure timeout (1 s) still ends the client's
// session: its call fails with Unavailable. Client and server are in two
// namespaces joined by a veth; the client is this binary re-executed in
// its namespace (the transport dials from its own goroutines, which would
// open their sockets in this process's namespace). Root only.
func TestHalfOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds network namespaces and starts a process")
	}
	p := testnet.NewPair(t)
	var ep *erpc.Endpoint
	if err := testnet.In(p.A, func() (err error) {
		ep, err = echoServer(t).Listen("tcp://"+net.JoinHostPort(p.AddrA.String(), "0"), erpc.Insecure()) // plaintext on purpose: a test namespace
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	cmd := exec.Command("ip", "netns", "exec", p.B, os.Args[0], "-test.run=^TestHelperClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), clientEnv+"="+ep.Target())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(40 * time.Second):
			t.Fatal("the client process said nothing for 40 s")
		}
		return ""
	}
	if l := next(); l != "UP" {
		t.Fatalf("client: %q, want UP", l)
	}
	time.Sleep(100 * time.Millisecond)
	p.LossOf(t, p.A, 0.999999, "tcp") // all but one in a million TCP packets into the server's namespace (the rule's most)
	l := next()
	if !strings.HasPrefix(l, "FAIL true after ") {
		t.Fatalf("client: %q, want a failure with Unavailable", l)
	}
	if n := p.Dropped(t, p.A); n == 0 {
		t.Fatal("nftables dropped nothing: the fault did not happen")
	}
	t.Logf("client: %s (nftables dropped %d packets)", l, p.Dropped(t, p.A))
}
