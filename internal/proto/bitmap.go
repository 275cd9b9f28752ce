package proto

import "math/bits"

// bitmap records which packets of a message have arrived or been
// acknowledged. Messages of up to 64 packets, the common case, use the inline
// word; larger ones reuse a slice that is kept across messages, so steady
// state does not allocate.
type bitmap struct {
	small uint64
	big   []uint64
}

// reset clears the bitmap and sizes it for n bits.
func (b *bitmap) reset(n uint32) {
	b.small = 0
	if n <= 64 {
		b.big = b.big[:0]
		return
	}
	words := int(n+63) / 64
	if cap(b.big) < words {
		b.big = make([]uint64, words)
		return
	}
	b.big = b.big[:words]
	clear(b.big)
}

// set marks bit i and reports whether it was already set. i must be below
// the size given to reset.
func (b *bitmap) set(i uint32) (was bool) {
	w, m := b.word(i)
	was = *w&m != 0
	*w |= m
	return was
}

// clear unmarks bit i.
func (b *bitmap) clear(i uint32) {
	w, m := b.word(i)
	*w &^= m
}

// next returns the lowest set bit at or above from, or -1.
func (b *bitmap) next(from uint32) int {
	if len(b.big) == 0 {
		if from >= 64 {
			return -1
		}
		if w := b.small >> from; w != 0 {
			return int(from) + bits.TrailingZeros64(w)
		}
		return -1
	}
	for k := int(from / 64); k < len(b.big); k++ {
		w := b.big[k]
		if k == int(from/64) {
			w &= ^uint64(0) << (from & 63)
		}
		if w != 0 {
			return k*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

func (b *bitmap) word(i uint32) (*uint64, uint64) {
	if len(b.big) == 0 {
		return &b.small, 1 << (i & 63)
	}
	return &b.big[i/64], 1 << (i & 63)
}

// shrink drops a large backing slice so an idle slot does not pin memory.
func (b *bitmap) shrink(maxWords int) {
	if cap(b.big) > maxWords {
		b.big = nil
	}
}
