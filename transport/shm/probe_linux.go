//go:build linux

package shm

import (
	"errors"
	"sync"
	"time"
)

// Checking a listener address looks a path up (stat, connect, and the
// inotify watch of its directory), and a path lookup on a file system
// that does not answer (a FUSE daemon that never replies, a hard NFS
// mount) blocks the calling thread for as long as it hangs, with no
// deadline to give it. A connector chooses the path it claims. So no
// goroutine that a handshake, the loop or Close waits for makes such a
// call: probe runs it in a goroutine of its own and waits at most until a
// deadline or Close. A probe that does not answer in time is abandoned: its
// goroutine (and the thread it blocks) outlives the wait, and Close, only
// while the file system hangs, touching nothing of the transport but the
// directory watches (whose use it undoes). At most maxProbes probes of a
// transport are in flight; beyond that, probe fails at once with
// errProbeBusy, so a hanging file system costs at most maxProbes threads.
const maxProbes = 4

var (
	errProbeBusy    = errors.New("shm: too many listener checks in flight")
	errProbeTimeout = errors.New("shm: listener check did not answer in time")
)

// probeRun is one probe's result, handed over under mu to whichever of
// the waiter and the probe's goroutine comes second.
type probeRun struct {
	mu        sync.Mutex
	finished  bool // check returned: ok holds its result
	abandoned bool // the waiter gave up: the goroutine undoes what check did
	ok        bool
	done      chan struct{}
}

// probe runs check in a goroutine of its own and returns its result, or
// errProbeTimeout at deadline or Close (then undo(ok) runs on check's
// result once it returns), or errProbeBusy.
func (t *Transport) probe(deadline time.Time, check func() bool, undo func(ok bool)) (bool, error) {
	if t.probing.Add(1) > maxProbes {
		t.probing.Add(-1)
		return false, errProbeBusy
	}
	r := &probeRun{done: make(chan struct{})}
	go func() {
		ok := check()
		t.probing.Add(-1)
		r.mu.Lock()
		r.finished, r.ok = true, ok
		abandoned := r.abandoned
		r.mu.Unlock()
		close(r.done)
		if abandoned && undo != nil {
			undo(ok)
		}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
	case <-t.closing:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finished {
		r.abandoned = true
		return false, errProbeTimeout
	}
	return r.ok, nil
}
