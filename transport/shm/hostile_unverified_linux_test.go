//go:build linux

package shm

import (
	"path/filepath"
	"testing"
	"time"
)

// TestHostileUnverifiedListenerUnreachable: a hostile connector holds the
// maxProbes probe slots (claims on a FUSE mount that never answers), so
// an honest listener S that connects to V meanwhile is not vouched for
// (documented: known by an assigned address). The documented consequence
// is only a different address; in fact V can then never Resolve S's path
// while that connection lives: V dials S, S (which verified V) finds its
// own connection to V known by the same address and answers "duplicate",
// and V, which has no connection known by S's listener address, fails
// Resolve with errDuplicate. One peer thus denies V all calls to S.
// Fixed (adoptDuplicate): the dial vouches for S (SO_PEERCRED of the
// socket to S's path: S's pid and start time are those of the connection
// V knows by an assigned address), which then takes S's address.
func TestHostileUnverifiedListenerUnreachable(t *testing.T) {
	shortHandshakes(t, 300*time.Millisecond)
	v, path := hostileListener(t, Options{})
	serveEcho(t, v)
	sock := hangingFUSE(t, filepath.Dir(path))
	claim, _ := listenerAddr(sock)
	for range maxProbes {
		go rawDial(path, minRingSize, rawOpts{seals: sealsNeeded, bell: -1, claim: claim, path: sock})
	}
	if n := waitProbes(v, maxProbes); n != maxProbes {
		t.Fatalf("%d probes in flight, want %d", n, maxProbes)
	}
	s, err := Listen(filepath.Join(filepath.Dir(path), "s.sock"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Resolve(path); err != nil {
		t.Fatalf("S cannot reach V: %v", err)
	}
	waitConns(t, v, 1)
	t.Logf("V knows S as %v (S is %v), unverified %d", v.snap.Load().conns[0].peer(), s.LocalAddr(), v.Stats().Unverified)
	a, err := v.Resolve(s.Target()[len("shm://"):])
	if err != nil {
		t.Fatalf("V cannot Resolve the honest listener S while S's connection to V is unverified: %v", err)
	}
	if a != s.LocalAddr() {
		t.Fatalf("V resolved S as %v, want %v", a, s.LocalAddr())
	}
	if c := v.snap.Load().byAddr[a]; c == nil || c.claimedPath == "" {
		t.Fatalf("V has no connection known by S's address, with S's path watched, after Resolve")
	}
}
