package accounting

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// maxBlocks bounds the block numbers a decoded set may use: sequence
// numbers up to 2^40, far beyond any run, so a corrupt or hostile input
// cannot make a decoder allocate without bound.
const maxBlocks = 1 << 28

// MarshalBinary encodes the set: the full-block bitmap, then each partial
// block's number and words, all little-endian, counts as uvarints.
func (s *SeqSet) MarshalBinary() ([]byte, error) {
	out := binary.AppendUvarint(nil, uint64(len(s.full)))
	for _, w := range s.full {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	keys := make([]uint64, 0, len(s.partial))
	for b := range s.partial {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	out = binary.AppendUvarint(out, uint64(len(keys)))
	for _, b := range keys {
		out = binary.AppendUvarint(out, b)
		for _, w := range s.partial[b].words {
			out = binary.LittleEndian.AppendUint64(out, w)
		}
	}
	return out, nil
}

// errCorrupt is returned for an encoding MarshalBinary did not write.
var errCorrupt = errors.New("sequence set encoding is corrupt")

// UnmarshalBinary replaces the set with the one data encodes. It rejects
// anything MarshalBinary would not have written: truncated data, trailing
// bytes, a block both full and partial or listed twice.
func (s *SeqSet) UnmarshalBinary(data []byte) error {
	*s = SeqSet{}
	n, data, err := uvarint(data)
	if err != nil || n > uint64(len(data))/8 || n*64 > maxBlocks {
		return errCorrupt
	}
	for range n {
		w := binary.LittleEndian.Uint64(data)
		data = data[8:]
		s.full = append(s.full, w)
		s.len += uint64(bits.OnesCount64(w)) * blockBits
	}
	parts, data, err := uvarint(data)
	if err != nil || parts > uint64(len(data))/(blockWords*8) {
		return errCorrupt
	}
	for range parts {
		var b uint64
		if b, data, err = uvarint(data); err != nil || b >= maxBlocks || len(data) < blockWords*8 {
			return errCorrupt
		}
		if s.isFull(b) || s.partial[b] != nil {
			return fmt.Errorf("%w: block %d appears twice", errCorrupt, b)
		}
		blk := &block{}
		for i := range blk.words {
			blk.words[i] = binary.LittleEndian.Uint64(data)
			blk.count += bits.OnesCount64(blk.words[i])
			data = data[8:]
		}
		s.addBlock(b, blk)
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after the end", errCorrupt, len(data))
	}
	return nil
}

func uvarint(data []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(data)
	if n <= 0 {
		return 0, nil, errCorrupt
	}
	return v, data[n:], nil
}

// addBlock puts a block that is not in the set yet into it: as full, as
// partial, or not at all when empty.
func (s *SeqSet) addBlock(b uint64, blk *block) {
	switch blk.count {
	case 0:
		return
	case blockBits:
		s.setFull(b)
	default:
		if s.partial == nil {
			s.partial = map[uint64]*block{}
		}
		s.partial[b] = blk
	}
	s.len += uint64(blk.count)
}

// MarshalText encodes the set as base64 of MarshalBinary, so that sets
// travel in JSON.
func (s *SeqSet) MarshalText() ([]byte, error) {
	bin, _ := s.MarshalBinary()
	return []byte(base64.StdEncoding.EncodeToString(bin)), nil
}

// UnmarshalText decodes what MarshalText wrote.
func (s *SeqSet) UnmarshalText(text []byte) error {
	bin, err := base64.StdEncoding.DecodeString(string(text))
	if err != nil {
		return fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return s.UnmarshalBinary(bin)
}

// Union adds every member of o to s and returns how many were in both.
func (s *SeqSet) Union(o *SeqSet) (common uint64) {
	s.cur = nil
	for i, word := range o.full {
		for word != 0 {
			b := uint64(i)*64 + uint64(bits.TrailingZeros64(word))
			word &= word - 1
			switch {
			case s.isFull(b):
				common += blockBits
			case s.partial[b] != nil:
				blk := s.partial[b]
				common += uint64(blk.count)
				s.len += blockBits - uint64(blk.count)
				delete(s.partial, b)
				s.setFull(b)
			default:
				s.len += blockBits
				s.setFull(b)
			}
		}
	}
	for b, ob := range o.partial {
		if s.isFull(b) {
			common += uint64(ob.count)
			continue
		}
		blk := s.partial[b]
		if blk == nil {
			c := *ob
			s.addBlock(b, &c)
			continue
		}
		for w := range blk.words {
			both := blk.words[w] & ob.words[w]
			added := ob.words[w] &^ blk.words[w]
			common += uint64(bits.OnesCount64(both))
			blk.words[w] |= added
			blk.count += bits.OnesCount64(added)
			s.len += uint64(bits.OnesCount64(added))
		}
		if blk.count == blockBits {
			delete(s.partial, b)
			s.setFull(b)
		}
	}
	return common
}

// deliveriesJSON is a Subscription's state on the wire.
type deliveriesJSON struct {
	Seen       []SeqSet `json:"seen"`
	Duplicated int64    `json:"duplicated"`
	Unknown    int64    `json:"unknown"`
}

// MarshalJSON encodes the record: every producer's delivered numbers and
// the counts of duplicates and unknown deliveries. It must not run
// concurrently with Record.
func (s *Subscription) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(deliveriesJSON{Seen: s.seen, Duplicated: s.duplicated, Unknown: s.unknown})
}

// UnmarshalJSON replaces the record with the one data encodes.
func (s *Subscription) UnmarshalJSON(data []byte) error {
	var d deliveriesJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	if d.Duplicated < 0 || d.Unknown < 0 {
		return fmt.Errorf("%w: negative counts", errCorrupt)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen, s.duplicated, s.unknown, s.distinct = d.Seen, d.Duplicated, d.Unknown, 0
	for i := range s.seen {
		s.distinct += int64(s.seen[i].Len())
	}
	return nil
}

// Merge adds the deliveries o recorded to s, as if one record had seen
// them all: a message both delivered counts as a duplicate. This is how
// the records of a subscription's consumers in different processes
// combine exactly. Neither may be recorded to meanwhile.
func (s *Subscription) Merge(o *Subscription) {
	if s == o {
		panic("accounting: Merge of a record with itself")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(s.seen) < len(o.seen) {
		s.seen = append(s.seen, SeqSet{})
	}
	s.duplicated += o.duplicated
	s.unknown += o.unknown
	s.distinct = 0
	for p := range s.seen {
		if p < len(o.seen) {
			s.duplicated += int64(s.seen[p].Union(&o.seen[p]))
		}
		s.distinct += int64(s.seen[p].Len())
	}
}
