package proto

// The per-packet paths of a client session used to walk all of its slots:
// for a free one when a call starts, for the one with the oldest unsent
// packets on every send. With a window of 64 those walks were most of the
// client's engine time. The two structures below answer both questions in
// constant time.

// slotStack is the session's free slots, the most recently freed on top.
type slotStack struct {
	idx []uint16
	// inline holds idx for a window of up to its length (useInline), the
	// default's: one array fewer to load per call.
	inline [8]uint16
}

// useInline makes the stack, empty, keep up to len(inline) slots inline.
func (st *slotStack) useInline() { st.idx = st.inline[:0] }

func (st *slotStack) push(i int) { st.idx = append(st.idx, uint16(i)) }

// pop returns a free slot, or -1.
func (st *slotStack) pop() int {
	n := len(st.idx)
	if n == 0 {
		return -1
	}
	i := st.idx[n-1]
	st.idx = st.idx[:n-1]
	return int(i)
}

// sendEntry is a slot that gained packets to send, stamped with its order.
type sendEntry struct {
	order uint64
	slot  uint16
}

// sendQueue holds slots in the order they gained packets to send (the
// eRPC stall queue's order, see pump). A slot is stamped afresh each time
// it gains packets (a call's start, a response's first packet), and only
// its latest entry counts: older ones are skipped when they reach the
// front, as are entries of slots that have sent everything.
type sendQueue struct{ ring[sendEntry] }

// oldest returns the slot with unsent packets that gained them first, or
// -1, dropping the entries in front of it that no longer count.
func (q *sendQueue) oldest(slots []clientSlot) int {
	for q.n > 0 {
		e := q.front()
		if sl := &slots[e.slot]; sl.order == e.order && sl.hasNew() {
			return int(e.slot)
		}
		q.pop()
	}
	return -1
}

// stamp marks slot i of cs as having gained packets to send now.
func (cs *clientSide) stamp(i int) {
	cs.orders++
	cs.slots[i].order = cs.orders
	cs.sendq.push(sendEntry{order: cs.orders, slot: uint16(i)})
}
