// Package heapq is a binary min-heap of values ordered by a less function,
// for the simulated networks' queues of datagrams in flight.
package heapq

// Heap is a min-heap; the zero value needs Less set before use.
type Heap[T any] struct {
	Less  func(a, b *T) bool
	items []T
}

// Len is the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Peek returns the least item. The heap must not be empty.
func (h *Heap[T]) Peek() *T { return &h.items[0] }

// Push adds v.
func (h *Heap[T]) Push(v T) {
	h.items = append(h.items, v)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.Less(&h.items[i], &h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

// Pop removes and returns the least item. The heap must not be empty.
func (h *Heap[T]) Pop() T {
	v := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	for i := 0; ; {
		l, j := 2*i+1, i
		if l < len(h.items) && h.Less(&h.items[l], &h.items[j]) {
			j = l
		}
		if r := l + 1; r < len(h.items) && h.Less(&h.items[r], &h.items[j]) {
			j = r
		}
		if j == i {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		i = j
	}
	return v
}

// Clear empties the heap.
func (h *Heap[T]) Clear() {
	clear(h.items)
	h.items = h.items[:0]
}
