//go:build linux

package shm

// Hostile peers: the test binary re-executed as a process that speaks the
// handshake itself with raw system calls and then misbehaves, against a
// listener in the test process (shm.Listen and its own Receive, Send, Wait
// loop). The listener must survive, stay responsive and keep serving a
// well-behaved peer.

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/erpc-go/erpc/transport"
)

// TestHostileShrink: a peer that shrinks the rings' memfd under the
// listener (which then faulted with SIGBUS on its next look at the ring).
// The listener takes only memfds sealed against resizing, so the
// ftruncate fails in the peer, and an unsealed memfd is refused in the
// handshake.
func TestHostileShrink(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	h := startHostile(t, path, "shrink")
	h.expect(t, "HANDSHAKE ok")
	if l := h.expect(t, "FTRUNCATE"); l != "FTRUNCATE "+unix.EPERM.Error() {
		t.Fatalf("ftruncate of the sealed memfd: %q, want EPERM", l)
	}
	h.expect(t, "ECHO true") // the connection still works
	checkEcho(t, path)

	h = startHostile(t, path, "unsealed")
	for range 3 {
		h.expect(t, "HANDSHAKE refused") // the listener hung up
	}
	checkEcho(t, path)
	waitConns(t, tr, 1) // the first hostile peer's
}

// TestHostileRingSizeFlip: a peer that flips the ring size word of the
// shared header while the listener handshakes (which then read it twice
// and sliced the rings out of bounds).
func TestHostileRingSizeFlip(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	const n = 50
	h := startHostile(t, path, "flipring:"+strconv.Itoa(n))
	ok := 0
	for i := range n {
		// The listener reads the word once: seeing the huge size, it
		// refuses the handshake; seeing the right one, it never reads
		// it again, and the connection works while the word flips.
		switch l := h.expect(t, fmt.Sprintf("HANDSHAKE %d ", i)); {
		case strings.HasSuffix(l, " ok ok ECHO true"):
			ok++
		case !strings.Contains(l, " refused refused: "):
			t.Fatalf("handshake %d: %q", i, l)
		}
	}
	t.Logf("%d of %d handshakes accepted", ok, n)
	if ok == 0 {
		t.Fatal("no handshake accepted: the word did not flip as meant")
	}
	checkEcho(t, path)
}

// TestHostileRingCounters: a peer that sets the ring counters to unaligned
// values before the handshake (the listener took them as its own positions
// and wrote a record header across the end of the ring), then to a tail
// beyond the ring: the listener drops that connection.
func TestHostileRingCounters(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	h := startHostile(t, path, "counters")
	h.expect(t, "HANDSHAKE ok")
	h.expect(t, "ECHO true")
	h.expect(t, "DROPPED true")
	if n := tr.Stats().Corrupt; n != 1 {
		t.Fatalf("%d corrupt rings counted, want 1", n)
	}
	checkEcho(t, path)
}

// TestHostileBadBell: bells that are not unix datagram sockets (a full
// blocking pipe, which the listener wrote to from its loop and blocked
// on; an eventfd; a UDP socket; a unix stream of packets) are refused in
// the handshake.
func TestHostileBadBell(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	serveEcho(t, tr)
	h := startHostile(t, path, "badbells")
	for _, name := range []string{"pipe", "eventfd", "udp", "seqpacket"} {
		h.expect(t, "HANDSHAKE "+name+" refused")
	}
	checkEcho(t, path)
	waitConns(t, tr, 0)
}

// TestHostileBlockingBell: a peer whose bell socket would block (queue
// full and never read, the file description set blocking, no send
// timeout) and whose sleeping word is always set. Sends to it ring it
// each time, and must neither block nor slow down; Close returns at once.
func TestHostileBlockingBell(t *testing.T) {
	tr, path := hostileListener(t, Options{})
	h := startHostile(t, path, "blockbell")
	h.expect(t, "HANDSHAKE ok")
	h.expect(t, "FILLED")
	peer, err := netip.ParseAddrPort(strings.TrimPrefix(h.expect(t, "ADDR "), "ADDR "))
	if err != nil {
		t.Fatal(err)
	}
	const sends = 1000
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		msg := []transport.Message{{To: peer, Head: []byte("x")}}
		for range sends {
			tr.Send(msg)
		}
		done <- time.Since(start)
	}()
	select {
	case d := <-done:
		t.Logf("%d sends in %v", sends, d)
		if d > 100*time.Millisecond {
			t.Fatalf("%d sends to the peer took %v", sends, d)
		}
	case <-time.After(5 * time.Second):
		h.kill() // lets the send go on, so that the test can end
		t.Fatal("Send blocked on the peer's bell")
	}
	if got := tr.Stats().Dropped; got != 0 {
		t.Fatalf("%d datagrams dropped", got)
	}
	start := time.Now()
	closed := make(chan struct{})
	go func() { tr.Close(); close(closed) }()
	select {
	case <-closed:
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("Close took %v", d)
		}
	case <-time.After(5 * time.Second):
		h.kill()
		t.Fatal("Close blocked")
	}
}

// TestHostileSleepingWord: a peer that keeps clearing the listener's
// sleeping word (which all peers shared, so nobody rang the listener and
// it slept until its deadline) delays nobody's wake-ups but its own. The
// listener's word of a connection now lies in the listener's memory,
// which the peer cannot map writable: it can clear only its own.
func TestHostileSleepingWord(t *testing.T) {
	l, path := hostileListener(t, Options{})
	h := startHostile(t, path, "clearsleep")
	h.expect(t, "HANDSHAKE ok")
	for _, what := range []string{"MAPWRITE ", "MPROTECT "} {
		if l := h.expect(t, what); l != what+unix.EACCES.Error() && l != what+unix.EPERM.Error() {
			t.Fatalf("the peer's writable view of the listener's memory: %q, want refused", l)
		}
	}
	h.expect(t, "CLEARING")
	cli, err := Listen("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	to, err := cli.Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Wait(time.Now()) // the wake-up of the new connection
	var worst time.Duration
	for range 20 {
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			time.Sleep(2 * time.Millisecond)
			cli.Send([]transport.Message{{To: to, Head: []byte("x")}})
		}()
		start := time.Now()
		l.Wait(time.Now().Add(time.Second))
		worst = max(worst, time.Since(start))
		<-sent
		for got := 0; got == 0; {
			got, _ = l.Receive(func(netip.AddrPort, []byte) {})
		}
	}
	t.Logf("slowest wake-up: %v", worst)
	if worst > 200*time.Millisecond {
		t.Fatalf("a wake-up took %v", worst)
	}
}

// TestMaxPeers: connections beyond Options.MaxPeers are refused with
// "full" at once, and the dialer's Resolve says so (ErrFull); a connection
// that closes makes room again.
func TestMaxPeers(t *testing.T) {
	tr, path := hostileListener(t, Options{MaxPeers: 3})
	serveEcho(t, tr)
	h := startHostile(t, path, "many:5")
	for i := range 5 {
		want := "ok"
		if i >= 3 {
			want = "full"
		}
		h.expect(t, fmt.Sprintf("CONN %d %s", i, want))
	}
	if err := echo(path); !errors.Is(err, ErrFull) {
		t.Fatalf("dial beyond MaxPeers: %v, want ErrFull", err)
	}
	if p := tr.Stats().Peers; p != 3 {
		t.Fatalf("%d peers, want 3", p)
	}
	h.kill()
	waitConns(t, tr, 0) // the loop released them (GonePeers)
	checkEcho(t, path)
}

// TestHalfOpenHandshake: connections that never send their hello count
// against MaxPeers while they last, and are closed after the handshake
// timeout.
func TestHalfOpenHandshake(t *testing.T) {
	const timeout = 500 * time.Millisecond
	shortHandshakes(t, timeout)
	tr, path := hostileListener(t, Options{MaxPeers: 2})
	serveEcho(t, tr)
	h := startHostile(t, path, "halfopen:3")
	h.expect(t, "CONN 0 ok")
	h.expect(t, "CONN 1 ok")
	h.expect(t, "CONN 2 full")
	if err := echo(path); !errors.Is(err, ErrFull) {
		t.Fatalf("dial with 2 handshakes pending: %v, want ErrFull", err)
	}
	for range 2 {
		f := strings.Fields(h.expect(t, "CLOSED"))
		ms, _ := strconv.Atoi(f[3])
		if f[2] != "true" || time.Duration(ms)*time.Millisecond > timeout+time.Second {
			t.Fatalf("half-open connection closed %v (%s ms after the greeting)", f[2], f[3])
		}
	}
	waitConns(t, tr, 0)
	checkEcho(t, path)
}
