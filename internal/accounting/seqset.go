// Package accounting counts, exactly, which messages each subscription
// received: how many were lost (acknowledged but never delivered),
// duplicated (delivered more than once) and reordered (delivered after a
// later message of the same producer on the same partition).
//
// Every message carries its producer's id and a sequence number that starts
// at 0 and grows by one per message the producer attempted to send, so a
// producer's messages are exactly the numbers [0, sent). Sets of sequence
// numbers are bitmaps in blocks of 4096; a block whose every number is in
// the set shrinks to one bit, so memory follows the numbers still missing
// (reordering windows and real losses), not the length of the run.
package accounting

import "math/bits"

const (
	blockBits  = 4096
	blockWords = blockBits / 64
)

type block struct {
	words [blockWords]uint64
	count int
}

var allOnes = func() *[blockWords]uint64 {
	var w [blockWords]uint64
	for i := range w {
		w[i] = ^uint64(0)
	}
	return &w
}()

var allZeros = &[blockWords]uint64{}

// SeqSet is a set of sequence numbers. The zero value is empty and ready to
// use. It is not safe for concurrent use.
type SeqSet struct {
	full    []uint64 // bit b set: block b holds all its numbers
	partial map[uint64]*block
	len     uint64
	// cur caches the partial block curIdx, the last one added to: numbers
	// mostly arrive in runs, so most Adds skip the map.
	cur    *block
	curIdx uint64
}

// Add inserts seq and reports whether it was already present.
func (s *SeqSet) Add(seq uint64) (present bool) {
	b, bit := seq/blockBits, seq%blockBits
	blk := s.cur
	if blk == nil || s.curIdx != b {
		if s.isFull(b) {
			return true
		}
		if s.partial == nil {
			s.partial = map[uint64]*block{}
		}
		blk = s.partial[b]
		if blk == nil {
			blk = &block{}
			s.partial[b] = blk
		}
		s.cur, s.curIdx = blk, b
	}
	w, mask := bit/64, uint64(1)<<(bit%64)
	if blk.words[w]&mask != 0 {
		return true
	}
	blk.words[w] |= mask
	blk.count++
	s.len++
	if blk.count == blockBits {
		delete(s.partial, b)
		s.setFull(b)
		s.cur = nil
	}
	return false
}

// Contains reports whether seq is in the set.
func (s *SeqSet) Contains(seq uint64) bool {
	w := s.block(seq / blockBits)
	bit := seq % blockBits
	return w[bit/64]&(uint64(1)<<(bit%64)) != 0
}

// CopyInto makes dst an independent copy of s.
func (s *SeqSet) CopyInto(dst *SeqSet) {
	dst.cur = nil
	dst.full = append(dst.full[:0], s.full...)
	dst.len = s.len
	dst.partial = make(map[uint64]*block, len(s.partial))
	for b, blk := range s.partial {
		c := *blk
		dst.partial[b] = &c
	}
}

// Len is the number of sequence numbers in the set.
func (s *SeqSet) Len() uint64 { return s.len }

// block returns the words of block b; shared read-only arrays stand for
// full and empty blocks.
func (s *SeqSet) block(b uint64) *[blockWords]uint64 {
	if s.isFull(b) {
		return allOnes
	}
	if blk := s.partial[b]; blk != nil {
		return &blk.words
	}
	return allZeros
}

func (s *SeqSet) isFull(b uint64) bool {
	i := b / 64
	return i < uint64(len(s.full)) && s.full[i]&(uint64(1)<<(b%64)) != 0
}

func (s *SeqSet) setFull(b uint64) {
	i := b / 64
	for uint64(len(s.full)) <= i {
		s.full = append(s.full, 0)
	}
	s.full[i] |= uint64(1) << (b % 64)
}

// countAbove counts the members >= n.
func (s *SeqSet) countAbove(n uint64) uint64 {
	var c uint64
	for i, word := range s.full {
		for word != 0 {
			b := uint64(i)*64 + uint64(bits.TrailingZeros64(word))
			word &= word - 1
			c += overlap(b, n)
		}
	}
	for b, blk := range s.partial {
		if (b+1)*blockBits <= n {
			continue
		}
		for w, word := range blk.words {
			c += uint64(bits.OnesCount64(word & aboveMask(b, uint64(w), n)))
		}
	}
	return c
}

// overlap is how many numbers of full block b are >= n.
func overlap(b, n uint64) uint64 {
	lo, hi := b*blockBits, (b+1)*blockBits
	switch {
	case n <= lo:
		return blockBits
	case n >= hi:
		return 0
	default:
		return hi - n
	}
}

// belowMask selects the bits of word w of block b whose numbers are < n.
func belowMask(b, w, n uint64) uint64 {
	first := b*blockBits + w*64
	switch {
	case n <= first:
		return 0
	case n >= first+64:
		return ^uint64(0)
	default:
		return uint64(1)<<(n-first) - 1
	}
}

// aboveMask selects the bits of word w of block b whose numbers are >= n.
func aboveMask(b, w, n uint64) uint64 { return ^belowMask(b, w, n) }
