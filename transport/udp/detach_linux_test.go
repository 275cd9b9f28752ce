//go:build linux && !erpc_portable

package udp

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// epollWatchers counts the registrations of the socket rc refers to in
// every epoll set of the process (the "tfd" lines of each set's fdinfo,
// matched by the socket's inode, so a registration through another
// descriptor of the same socket counts too).
func epollWatchers(t *testing.T, tr *Transport) int {
	t.Helper()
	var ino uint64
	tr.rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if err := unix.Fstat(int(fd), &st); err != nil {
			t.Fatal(err)
		}
		ino = st.Ino
	})
	want := fmt.Sprintf(" ino:%x ", ino)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range fds {
		if link, _ := os.Readlink("/proc/self/fd/" + e.Name()); link != "anon_inode:[eventpoll]" {
			continue
		}
		info, _ := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		for line := range strings.Lines(string(info)) {
			if strings.HasPrefix(line, "tfd:") && strings.Contains(line, want) {
				n++
			}
		}
	}
	return n
}

// The socket is in no epoll set while the loop runs (each registration
// costs every datagram), and in the transport's own set while Wait parks,
// so a datagram still ends the park, and one that came before the park
// does not wait for the deadline.
func TestSocketWatchedOnlyWhileParked(t *testing.T) {
	a, b := listenPair(t)
	if n := epollWatchers(t, a); n != 0 {
		t.Fatalf("socket in %d epoll sets after Listen, want none", n)
	}
	sendText(t, b, a.LocalAddr(), "early")
	start := time.Now()
	if err := a.Wait(start.Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Wait took %v with a datagram already waiting", d)
	}
	if got := receiveN(t, a, 1); len(got) != 1 || string(got[0]) != "early" {
		t.Fatalf("received %q, want the early datagram", got)
	}
	done := make(chan error, 1)
	go func() { done <- a.Wait(time.Now().Add(10 * time.Second)) }()
	deadline := time.Now().Add(5 * time.Second)
	for epollWatchers(t, a) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("socket never in an epoll set while Wait parks")
		}
		time.Sleep(time.Millisecond)
	}
	sendText(t, b, a.LocalAddr(), "wake")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait slept through a datagram")
	}
	if n := epollWatchers(t, a); n != 0 {
		t.Fatalf("socket in %d epoll sets after Wait returned, want none", n)
	}
}
