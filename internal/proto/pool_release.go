package proto

import "time"

// Receive memory follows load (NEBULA): the pool keeps free buffers so a
// busy server allocates nothing, but a buffer that no request needed for a
// whole PoolIdle period is given back to the Go heap, as the runtime's
// scavenger gives idle pages back to the OS. Each size class tracks the
// lowest length its free list reached since the last sweep: that many
// buffers sat unused the whole period, so a sweep drops them (the oldest
// first, from the bottom of the stack; get and put work at the top). A
// steady load keeps its working set, since the lists' low marks stay near
// zero; once the load ends, everything goes within two periods.
//
// The sweep is a timer of its own, armed only while the pool holds
// buffers, so an empty pool never wakes an idle endpoint.

// sweepPool drops the buffers each class has not lent since the last sweep
// and returns how many bytes it dropped.
func (p *bufPool) sweepPool() (released int) {
	for c := range p.classes {
		list := p.classes[c]
		idle := min(int(p.low[c]), len(list))
		if idle > 0 {
			n := copy(list, list[idle:])
			clear(list[n:])
			p.classes[c] = list[:n]
			released += idle << c
		}
		p.low[c] = int32(len(p.classes[c]))
	}
	p.held -= released
	return released
}

// notePoolUse records a class's free-list length after a get.
func (p *bufPool) notePoolUse(c, length int) {
	if int32(length) < p.low[c] {
		p.low[c] = int32(length)
	}
}

// tickPool arms the pool's sweep when it holds buffers and runs it when due.
func (e *Engine) tickPool(now Time) {
	period := e.cfg.PoolIdle
	if period < 0 {
		return
	}
	switch {
	case e.bufs.held == 0:
		e.poolSweepAt = Never
	case e.poolSweepAt == Never:
		e.poolSweepAt = now.Add(period)
		e.bufs.resetLow()
	case now >= e.poolSweepAt:
		n := e.bufs.sweepPool()
		e.stats.PoolReleasedBytes += uint64(n)
		e.releasedPending += n
		e.poolSweepAt = now.Add(period)
		if e.bufs.held == 0 {
			e.poolSweepAt = Never
		}
	}
}

// resetLow starts a fresh period: only use from now on counts.
func (p *bufPool) resetLow() {
	for c := range p.classes {
		p.low[c] = int32(len(p.classes[c]))
	}
}

// defaultPoolIdle is how long a free buffer may go unused before the pool
// gives it back: long enough that a load with pauses of a second or so
// keeps its buffers, short enough that memory follows a load that ended
// within seconds (issue 33 asks for RSS back within 10 s).
const defaultPoolIdle = 2 * time.Second

// PoolReleased returns the bytes the pool has given back since the last
// call. The driver uses it to hand a large release on to the operating
// system: memory dropped from the pool returns to the Go heap, which
// shrinks only at the next garbage collection, and an idle process may
// not run one for minutes.
func (e *Engine) PoolReleased() int {
	n := e.releasedPending
	e.releasedPending = 0
	return n
}
