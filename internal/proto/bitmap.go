package proto

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
