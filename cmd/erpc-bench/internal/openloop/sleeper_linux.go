package openloop

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Sleeper waits until a point in time more precisely than time.Sleep
// alone, whatever the rest of the process does. The slo scenario needs it
// twice: the load generator sends at planned times, and the servers emulate
// service times of 0.5 ms and up by waiting.
//
// Go's timers are checked by the scheduler: precise while some goroutine
// keeps it busy (an erpc event loop polling, say), but in a process with
// nothing to run the scheduler sleeps in epoll_wait, whose timeout is in
// whole milliseconds, so a 500 µs sleep lasts a millisecond or more
// (measured here: p50 overshoot 0.6 ms for 500 µs, 1 ms for 100 µs). A
// timerfd is the kernel's own high-resolution timer, made readable at its
// expiry, and that wakes epoll_wait at once; but while goroutines keep the
// scheduler busy it polls epoll only from its monitor thread, every 10 ms.
// So the sleeper arms both and returns on whichever fires first, after
// checking the clock (a stale timerfd expiry from an earlier wait cannot
// end a later one early).
type Sleeper struct {
	fd    int
	f     *os.File
	fired chan struct{}
	t     *time.Timer
}

// NewSleeper opens a timerfd and the goroutine that reads it.
func NewSleeper() (*Sleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	s := &Sleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), fired: make(chan struct{}, 1),
		t: time.NewTimer(time.Hour)}
	s.t.Stop()
	go s.watch()
	return s, nil
}

// watch turns the timerfd's expiries into tokens on fired; it ends when
// the file is closed.
func (s *Sleeper) watch() {
	var b [8]byte
	for {
		if _, err := s.f.Read(b[:]); err != nil {
			return
		}
		select {
		case s.fired <- struct{}{}:
		default:
		}
	}
}

// Until returns at deadline or just after.
func (s *Sleeper) Until(deadline time.Time) {
	d := time.Until(deadline)
	if d <= 0 {
		return
	}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) == nil {
		at := unix.NsecToTimespec(now.Nano() + int64(d))
		_ = unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &unix.ItimerSpec{Value: at}, nil)
	}
	s.t.Reset(d)
	for time.Now().Before(deadline) {
		select {
		case <-s.t.C:
		case <-s.fired:
		}
	}
	s.t.Stop()
}

// Close closes the timer.
func (s *Sleeper) Close() { s.f.Close() }

// SleeperPool hands out sleepers: one per goroutine that waits at a time.
type SleeperPool struct {
	mu   sync.Mutex
	free []*Sleeper
	all  []*Sleeper
}

func (p *SleeperPool) get() *Sleeper {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	s, err := NewSleeper()
	if err != nil {
		return nil // the caller falls back to time.Sleep
	}
	p.all = append(p.all, s)
	return s
}

func (p *SleeperPool) put(s *Sleeper) {
	if s == nil {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, s)
	p.mu.Unlock()
}

// SleepFor waits d with a sleeper from the pool.
func (p *SleeperPool) SleepFor(d time.Duration) {
	deadline := time.Now().Add(d)
	s := p.get()
	if s == nil {
		time.Sleep(d)
		return
	}
	s.Until(deadline)
	p.put(s)
}

// Close closes the pool's sleepers.
func (p *SleeperPool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.all {
		s.Close()
	}
	p.all, p.free = nil, nil
}
