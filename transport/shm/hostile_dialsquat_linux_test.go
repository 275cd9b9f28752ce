//go:build linux

package shm

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erpc-go/erpc/transport"
)

const dialSquatEnv = "ERPC_SHM_REVIEW_DIALSQUAT" // the path to squat

// TestHostileDialSquatHelper is a process that listens on a free path (a
// victim server's, while it is down) with a transport of its own, waits
// for one connection (the victim's client resolving the path), then stops
// listening (the socket file goes) while keeping that connection, and
// reports every datagram it gets as "GOT <data>".
func TestHostileDialSquatHelper(t *testing.T) {
	path := os.Getenv(dialSquatEnv)
	if path == "" {
		t.Skip("runs only as the squatting process")
	}
	tr, err := Listen(path, Options{})
	if err != nil {
		say("LISTEN %v", err)
		return
	}
	say("LISTENING")
	for tr.Stats().Peers == 0 {
		time.Sleep(time.Millisecond)
	}
	tr.ln.Close() // stops listening, removes the file; the connection stays
	say("RELEASED")
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		tr.Receive(func(_ netip.AddrPort, d []byte) { say("GOT %s", d) })
	}
}

// TestHostileDialedAddressKeptBySquatter: a listener address taken from a
// claim is watched (inotify) and checked on conflict, but one the
// transport got by dialing the path is checked only when Resolve names the
// path again. A process that listened on a victim's path while the victim
// was down, was dialed there, and gave the path up keeps the path's
// address at the dialer after the victim listens there again: what the
// dialer sends to that address (the victim's, whoever listens there)
// reaches the squatter, for as long as the dialer does not Resolve again
// (an endpoint with an open session does not). And the re-check on Resolve
// runs in a probe: with the maxProbes slots held (claims on a FUSE mount
// that never answers), Resolve keeps the squatter's connection ("no
// answer: keep it") and returns its address as the victim's. Fixed: the
// dialer watches the dialed path's directory (inotify) like a claimed
// one's, and the connection loses the address when the name goes.
func TestHostileDialedAddressKeptBySquatter(t *testing.T) {
	shortHandshakes(t, 300*time.Millisecond)
	v, pathV := hostileListener(t, Options{})
	squat := filepath.Join(filepath.Dir(pathV), "s.sock")
	h := startHelperProcess(t, "TestHostileDialSquatHelper", dialSquatEnv+"="+squat)
	h.expect(t, "LISTENING")
	a, err := v.Resolve(squat)
	if err != nil {
		t.Fatal(err)
	}
	h.expect(t, "RELEASED")
	victim, err := Listen(squat, Options{}) // the victim server comes (back) up on its path
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	if victim.LocalAddr() != a {
		t.Fatalf("victim %v, resolved %v", victim.LocalAddr(), a)
	}
	got := func(what string) bool {
		for end := time.After(time.Second); ; {
			select {
			case l := <-h.lines:
				if strings.HasPrefix(l, "GOT "+what) {
					return true
				}
			case <-end:
				return false
			}
		}
	}

	// The dialer's watch revokes the squatter's connection when its
	// watcher goroutine reads the unlink (asynchronously: a datagram sent
	// in between still reaches the squatter, the documented window).
	for end := time.Now().Add(2 * time.Second); v.Stats().Revoked == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	// An open session keeps sending to the address it resolved.
	v.Send([]transport.Message{{To: a, Head: []byte("session")}})
	if got("session") {
		t.Errorf("the squatter, which no longer listens at %s, got what the dialer sent to that path's address %v, where the victim listens now", squat, a)
	}

	if st := v.Stats(); st.Revoked != 1 {
		t.Errorf("the squatter's connection should have lost the path's address when the name went: %+v", st)
	}

	// Resolve names the path again, while a hostile connector holds
	// the probe slots.
	sock := hangingFUSE(t, filepath.Dir(pathV))
	claim, _ := listenerAddr(sock)
	for range maxProbes {
		go rawDial(pathV, minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim, path: sock})
	}
	if n := waitProbes(v, maxProbes); n != maxProbes {
		t.Fatalf("%d probes in flight, want %d", n, maxProbes)
	}
	if b, err := v.Resolve(squat); err != nil || b != a {
		t.Fatalf("Resolve: %v %v", b, err)
	}
	v.Send([]transport.Message{{To: a, Head: []byte("resolved")}})
	if got("resolved") {
		t.Errorf("after Resolve(%s), which the victim listens at, what the dialer sent to %v reached the squatter", squat, a)
	}
}
