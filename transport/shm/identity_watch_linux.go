//go:build linux

package shm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A listener address taken from a connector's claim is kept only while the
// connector's process listens at the claimed path. The kernel tells nobody
// when a socket stops listening, but no other socket can listen at that
// path until the name is unlinked or renamed over (only one socket is
// bound at a path), and those change the directory: the listener watches
// the directory of every claimed path it took (inotify), and a connection
// whose path's name changes is checked again at once (recheckDir): one
// whose process no longer listens there loses the address. So a process
// that gave the path up loses the address as soon as the watcher's
// goroutine reads the event and a probe answers, not when another first
// competes for it. (A probe, not the event alone: the watcher may read an
// event after a connection claimed its name, as when it reads the honest
// listener's own creation of its socket late.) Out
// of sight: a rename of the directory or one of its parents, and mounts
// over them; whoever may do that owns the path anyway.
//
// One inotify instance serves the whole process (a user has few: 128 by
// default), read by one goroutine that lives as long as the process once
// started; a watch is removed when the last connection that needs it goes.

const dirEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

type watchedDir struct {
	wd      int32
	gen     uint64             // events on the directory itself, or lost
	names   map[string]int     // the names it was added by (a directory may have several), and their uses
	subs    map[*Transport]int // connections of each transport that need the watch
	claimed map[string]int     // the claimed sockets' names in it, and their uses
	nameGen map[string]uint64  // events on each of those names
}

type dirWatcher struct {
	mu    sync.Mutex
	fd    int // the inotify instance; 0 until the first watch
	byWD  map[int32]*watchedDir
	byDir map[string]*watchedDir
}

var claimedDirs dirWatcher

// add watches the directory of the socket path for t and returns the
// count of events that concern path (see gen); undo with remove. It looks
// the directory up, so it may block on a hanging file system (see probe):
// not while holding w.mu, which the loop may need (remove).
func (w *dirWatcher) add(t *Transport, path string) (uint64, error) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	w.mu.Lock()
	if w.fd == 0 {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			w.mu.Unlock()
			return 0, err
		}
		w.fd = fd
		w.byWD, w.byDir = make(map[int32]*watchedDir), make(map[string]*watchedDir)
		go w.run(os.NewFile(uintptr(fd), "erpc-shm-inotify")) // read through the netpoller
	}
	fd := w.fd
	d := w.byDir[dir]
	w.mu.Unlock()
	var wd int
	if d == nil {
		var err error
		if wd, err = unix.InotifyAddWatch(fd, dir, dirEvents); err != nil {
			return 0, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if d = w.byDir[dir]; d == nil { // not added meanwhile, nor gone with its directory
		if wd == 0 { // it was, and is gone: the directory too
			return 0, unix.ENOENT
		}
		if d = w.byWD[int32(wd)]; d == nil {
			d = &watchedDir{wd: int32(wd), names: map[string]int{}, subs: map[*Transport]int{},
				claimed: map[string]int{}, nameGen: map[string]uint64{}}
			w.byWD[d.wd] = d
		}
		w.byDir[dir] = d
	}
	d.names[dir]++
	d.subs[t]++
	d.claimed[name]++
	return d.gen + d.nameGen[name], nil
}

// gen returns the count of events that concern the socket path: on its
// name, on its directory, or lost.
func (w *dirWatcher) gen(path string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.byDir[filepath.Dir(path)]; d != nil {
		return d.gen + d.nameGen[filepath.Base(path)]
	}
	return ^uint64(0) // gone with its directory
}

// remove drops one of t's uses of the watch of path's directory.
func (w *dirWatcher) remove(t *Transport, path string) {
	dir, name := filepath.Dir(path), filepath.Base(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.byDir[dir]
	if d == nil {
		return // gone with its directory
	}
	if d.names[dir]--; d.names[dir] <= 0 {
		delete(d.names, dir)
		delete(w.byDir, dir)
	}
	if d.subs[t]--; d.subs[t] <= 0 {
		delete(d.subs, t)
	}
	if d.claimed[name]--; d.claimed[name] <= 0 {
		delete(d.claimed, name)
		delete(d.nameGen, name)
	}
	if len(d.names) == 0 {
		unix.InotifyRmWatch(w.fd, uint32(d.wd))
		delete(w.byWD, d.wd)
	}
}

// run reads events and has the transports that watch a directory check
// their connections there (all of them, if events were lost).
func (w *dirWatcher) run(f *os.File) {
	buf := make([]byte, 64<<10)
	type check struct {
		t        *Transport
		dir, sub string
		probe    bool
	}
	for {
		n, err := f.Read(buf)
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the file is never closed: EINTR and the like
			continue
		}
		var checks []check
		w.mu.Lock()
		queue := func(d *watchedDir, name string, probe bool) {
			if name == "" {
				d.gen++
			} else if d.claimed[name] == 0 {
				return // no claimed socket's name: nothing to do
			} else {
				d.nameGen[name]++
			}
			for t := range d.subs {
				for dir := range d.names {
					checks = append(checks, check{t, dir, name, probe})
				}
			}
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:end]), "\x00")
			off = end
			switch d := w.byWD[ev.Wd]; {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				for _, d := range w.byWD {
					queue(d, "", true) // events lost: check them all
				}
			case d != nil && ev.Mask&unix.IN_IGNORED != 0:
				// The directory is gone (or its file system): the
				// watch is no more, and a later add must make a new one.
				queue(d, "", false)
				delete(w.byWD, d.wd)
				for dir := range d.names {
					delete(w.byDir, dir)
				}
			case d != nil && ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
				queue(d, "", false)
			case d != nil:
				// Probe rather than revoke: the watcher may read an event
				// after a connection claimed the name it reports (the
				// honest listener's own creation of its socket, read late
				// on a loaded host), and only a probe tells who listens
				// there now.
				queue(d, name, true)
			}
		}
		w.mu.Unlock()
		for _, c := range checks {
			c.t.recheckDir(c.dir, c.sub, c.probe)
		}
	}
}

// recheckDir acts on a change of the name name in dir ("": of dir itself,
// or of any name) for t's connections with a claimed path there. Without
// probe, the change itself revokes their addresses, at once: the path no
// longer leads to the socket that was checked (no honest transport keeps
// its connections when it stops listening, so none listens anew at the
// same path while they are open). With probe (events were lost, or came
// between a handshake's check and its connection's registration), each is
// checked again, in a goroutine of t's.
func (t *Transport) recheckDir(dir, name string, probe bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return
	}
	revoked := false
	for _, c := range t.conns {
		if c.claimedPath == "" || filepath.Dir(c.claimedPath) != dir || (name != "" && filepath.Base(c.claimedPath) != name) {
			continue
		}
		if probe {
			t.recheck = append(t.recheck, c)
		} else if !c.dead.Load() {
			t.revokeLocked(c)
			revoked = true
		}
	}
	if revoked {
		t.publishLocked()
	}
	if len(t.recheck) == 0 || t.rechecking {
		return
	}
	t.rechecking = true
	t.wg.Add(1)
	go t.recheckClaims()
}

// recheckClaims probes the claimed path of each connection queued by
// recheckDir and revokes the address of those whose process the kernel
// says no longer listens there (another process does, nobody does, or the
// file is not a socket of the connector's user). A probe that says nothing
// (no answer in time, too many in flight, a full listen backlog) is tried
// again 100 ms later, for as long as the connection lives: a third party
// that makes probes fail (a hanging file system of its own) must not take
// honest peers' addresses away, and the address stays contested anyway
// (supersedes, resolved).
func (t *Transport) recheckClaims() {
	defer t.wg.Done()
	for {
		t.mu.Lock()
		q := t.recheck
		t.recheck = nil
		if len(q) == 0 || t.closed.Load() {
			t.rechecking = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		var undecided []*conn
		for _, c := range q {
			if kind, _, _ := addrKind(c.peer()); c.dead.Load() || kind != kindListener {
				continue
			}
			var listens bool
			decided, err := t.probe(time.Now().Add(handshakeTimeout), func() bool {
				cred, err := listeningCred(c.claimedPath, int64(c.claimedUid))
				listens = err == nil && cred.Pid == c.listenPid
				return err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, errNotOwnSocket)
			}, nil)
			switch {
			case err != nil || !decided:
				undecided = append(undecided, c)
			case !listens:
				t.mu.Lock()
				t.revokeLocked(c)
				t.publishLocked()
				t.mu.Unlock()
			}
		}
		if len(undecided) > 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-t.closing:
			}
			t.mu.Lock()
			t.recheck = append(t.recheck, undecided...)
			t.mu.Unlock()
		}
	}
}
