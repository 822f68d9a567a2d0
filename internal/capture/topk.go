package capture

import (
	"container/heap"
	"sort"
)

// TopK counts the most frequent of a stream of 64-bit key hashes in
// bounded memory with the space-saving algorithm (Metwally, Agrawal and
// El Abbadi, 2005): it keeps Capacity counters; a hash without one takes
// over the smallest, inheriting its count as its error. Every hash whose
// true count is above total/Capacity has a counter, and a counter's count
// overestimates its true count by at most its Error. A TopK is not safe
// for concurrent use.
type TopK struct {
	capacity int
	// counters is a min-heap by count; at maps a hash to its index.
	counters counterHeap
	at       map[uint64]int
}

// KeyCount is one counter of a TopK: Count is at least the hash's true
// count and at most Error above it.
type KeyCount struct {
	Hash  uint64 `json:"-"`
	Count int64  `json:"count"`
	Error int64  `json:"error,omitempty"`
}

// NewTopK returns a TopK of capacity counters (at least 1).
func NewTopK(capacity int) *TopK {
	capacity = max(capacity, 1)
	t := &TopK{capacity: capacity, at: make(map[uint64]int, capacity)}
	t.counters.at = t.at
	return t
}

// Add counts one occurrence of hash.
func (t *TopK) Add(hash uint64) {
	if i, ok := t.at[hash]; ok {
		t.counters.items[i].Count++
		heap.Fix(&t.counters, i)
		return
	}
	if len(t.counters.items) < t.capacity {
		heap.Push(&t.counters, KeyCount{Hash: hash, Count: 1})
		return
	}
	least := t.counters.items[0]
	delete(t.at, least.Hash)
	t.counters.items[0] = KeyCount{Hash: hash, Count: least.Count + 1, Error: least.Count}
	t.at[hash] = 0
	heap.Fix(&t.counters, 0)
}

// Saturated reports whether every counter is taken: hashes have then
// been evicted, and the smallest counts are the least certain.
func (t *TopK) Saturated() bool { return len(t.counters.items) == t.capacity }

// Counts returns the counters, largest count first.
func (t *TopK) Counts() []KeyCount {
	out := append([]KeyCount(nil), t.counters.items...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Hash < out[j].Hash
	})
	return out
}

// counterHeap is a min-heap of counters by count that keeps at, the
// index of each hash, current.
type counterHeap struct {
	items []KeyCount
	at    map[uint64]int
}

func (h *counterHeap) Len() int           { return len(h.items) }
func (h *counterHeap) Less(i, j int) bool { return h.items[i].Count < h.items[j].Count }
func (h *counterHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.at[h.items[i].Hash], h.at[h.items[j].Hash] = i, j
}
func (h *counterHeap) Push(x any) {
	c := x.(KeyCount)
	h.at[c.Hash] = len(h.items)
	h.items = append(h.items, c)
}
func (h *counterHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	delete(h.at, last.Hash)
	return last
}
