package proto

import "time"

// perSecond counts events in whole seconds of engine time, so that a
// reader can ask for the rate over the last complete second without the
// engine keeping a history or a timer.
type perSecond struct {
	sec       int64  // the second cur counts
	cur, prev uint64 // events in that second and in the one before it
}

func (m *perSecond) add(now Time) {
	s := int64(now) / int64(time.Second)
	if s != m.sec {
		m.prev = 0
		if s == m.sec+1 {
			m.prev = m.cur
		}
		m.sec, m.cur = s, 0
	}
	m.cur++
}

// last is the number of events in the last complete second before now.
func (m *perSecond) last(now Time) uint64 {
	switch int64(now) / int64(time.Second) {
	case m.sec:
		return m.prev
	case m.sec + 1:
		return m.cur
	}
	return 0
}
