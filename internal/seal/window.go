package seal

// WindowSize is how many packet numbers below the highest one opened an
// Opener still accepts (once each). erpc sprays a session's packets over
// up to 64 paths, so packets arrive out of order by the number sent during
// the paths' delay difference: 4096 covers 4 ms of skew at a million
// packets a second per session (more than a core sends), 128 times the
// default 32 credits in flight. A packet older than that is dropped and
// recovered as a loss (a retransmission is a new packet number). It costs
// 512 bytes per Opener.
const WindowSize = 4096

const windowWords = WindowSize / 64

// window is the replay window: a ring bitmap of the WindowSize packet
// numbers [top-WindowSize, top-1], bit pn%WindowSize set once pn opened.
type window struct {
	top  uint64 // highest packet number opened + 1; 0 before the first
	bits [windowWords]uint64
}

// check says whether pn may still be opened: not below the window (too
// old) and not opened before (replay). It changes nothing.
func (w *window) check(pn uint64) error {
	if pn >= w.top {
		return nil
	}
	if w.top-pn > WindowSize {
		return ErrTooOld
	}
	if w.bits[(pn/64)%windowWords]&(1<<(pn%64)) != 0 {
		return ErrReplay
	}
	return nil
}

// mark records pn as opened, moving the window up when pn is new highest.
// Only a packet that authenticated may call it: a forged packet number
// never moves the window.
func (w *window) mark(pn uint64) {
	if pn >= w.top {
		w.clear(w.top, pn)
		w.top = pn + 1
	}
	w.bits[(pn/64)%windowWords] |= 1 << (pn % 64)
}

// clear unsets the bits of packet numbers from..to, which enter the window
// as it moves up (their ring slots held numbers WindowSize lower).
func (w *window) clear(from, to uint64) {
	if to-from >= WindowSize {
		w.bits = [windowWords]uint64{}
		return
	}
	for pn := from; pn <= to; {
		if pn%64 == 0 && to-pn >= 63 {
			w.bits[(pn/64)%windowWords] = 0
			pn += 64
			continue
		}
		w.bits[(pn/64)%windowWords] &^= 1 << (pn % 64)
		pn++
	}
}

// lowEdge is the lowest packet number the window still accepts.
func (w *window) lowEdge() uint64 {
	if w.top < WindowSize {
		return 0
	}
	return w.top - WindowSize
}
