package payload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// KeyMode selects how message keys are chosen.
type KeyMode string

// Key modes: the first three are OpenMessaging Benchmark's key
// distributors, by their names there.
const (
	NoKey      KeyMode = "NO_KEY"
	RoundRobin KeyMode = "KEY_ROUND_ROBIN"
	// RandomKey chooses among the keys uniformly.
	RandomKey KeyMode = "RANDOM_NANO"
	// ZipfKey chooses the key of rank r (1 to Count) with probability
	// proportional to 1/r^ZipfS: a few hot keys, as real traffic has.
	ZipfKey KeyMode = "ZIPF"
)

// DefaultKeyCount is the number of distinct keys of a keyed mode that
// gives none: OpenMessaging Benchmark's.
const DefaultKeyCount = 10_000

// MaxKeyCount bounds KeySpec.Count: the keys and a Zipf table of this
// many take 19 MB, shared by every producer of the process.
const MaxKeyCount = 1_000_000

// keyLength is the length of every key: 7 characters, as OpenMessaging
// Benchmark's keys.
const keyLength = 7

// KeySpec says how message keys are chosen.
type KeySpec struct {
	Mode KeyMode
	// Count is the number of distinct keys (0: DefaultKeyCount). Every
	// producer chooses among the same keys, as production's producers
	// share their key space.
	Count int
	// ZipfS is ZipfKey's exponent, above 0 (1 is the classic Zipf).
	ZipfS float64
}

// Validate returns an error saying what is wrong with s, or nil.
func (s KeySpec) Validate() error {
	switch s.Mode {
	case NoKey, "", RoundRobin, RandomKey:
	case ZipfKey:
		if !(s.ZipfS > 0) || s.ZipfS > 10 {
			return fmt.Errorf("the ZIPF key distributor's exponent must be above 0 and at most 10, got %v", s.ZipfS)
		}
	default:
		return fmt.Errorf("unknown key distributor %q: use NO_KEY, KEY_ROUND_ROBIN, RANDOM_NANO or ZIPF", s.Mode)
	}
	if s.Count < 0 || s.Count > MaxKeyCount {
		return fmt.Errorf("the number of keys must be from 1 to %d, got %d", MaxKeyCount, s.Count)
	}
	return nil
}

// keySet is the keys of one count, and for a Zipf distribution its
// cumulative table; immutable once made, shared by every producer.
type keySet struct {
	// bytes holds the keys one after another, keyLength bytes each.
	bytes []byte
	// alias is ZipfKey's table for choosing a rank in constant time
	// (nil for the other modes).
	alias *aliasTable
}

// key returns key i.
func (ks *keySet) key(i int) []byte { return ks.bytes[i*keyLength : (i+1)*keyLength : (i+1)*keyLength] }

var (
	keySetsMu sync.Mutex
	keySets   = map[KeySpec]*keySet{}
)

// keyMultiplier spreads the key numbers over the key space: it has no
// factor in common with 62 (2 and 31), so i -> i*keyMultiplier mod 62^7
// is a bijection and the keys are distinct.
const keyMultiplier = 2_654_435_761

// setFor returns the shared key set of s (Count and, for ZipfKey, ZipfS
// decide it), made on first use.
func setFor(s KeySpec) *keySet {
	id := KeySpec{Count: s.Count}
	if s.Mode == ZipfKey {
		id.Mode, id.ZipfS = ZipfKey, s.ZipfS
	}
	keySetsMu.Lock()
	defer keySetsMu.Unlock()
	if ks, ok := keySets[id]; ok {
		return ks
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	space := uint64(math.Pow(62, keyLength))
	ks := &keySet{bytes: make([]byte, s.Count*keyLength)}
	for i := range s.Count {
		v := uint64(i) * keyMultiplier % space
		for j := keyLength - 1; j >= 0; j-- {
			ks.bytes[i*keyLength+j] = alphabet[v%62]
			v /= 62
		}
	}
	if s.Mode == ZipfKey {
		weights := make([]float64, s.Count)
		for r := range weights {
			weights[r] = math.Pow(float64(r+1), -s.ZipfS)
		}
		ks.alias = newAliasTable(weights)
	}
	keySets[id] = ks
	return ks
}

// Keys chooses message keys without allocating per message. A Keys value is
// owned by one producer goroutine and is not safe for concurrent use.
type Keys struct {
	mode KeyMode
	set  *keySet
	next int
	rng  *rand.Rand
}

// NewKeys returns the keys of one producer for s. seed makes the random
// choice among the keys reproducible; the keys themselves are the same for
// every producer and seed.
func NewKeys(s KeySpec, seed uint64) (*Keys, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	k := &Keys{mode: s.Mode, rng: rand.New(rand.NewPCG(seed, 0xda3e39cb94b95bdb))}
	if s.Mode == NoKey || s.Mode == "" {
		k.mode = NoKey
		return k, nil
	}
	if s.Count == 0 {
		s.Count = DefaultKeyCount
	}
	k.set = setFor(s)
	return k, nil
}

// Next returns the key for the next message, or nil for NoKey.
func (k *Keys) Next() []byte {
	switch k.mode {
	case RoundRobin:
		key := k.set.key(k.next)
		k.next = (k.next + 1) % (len(k.set.bytes) / keyLength)
		return key
	case RandomKey:
		return k.set.key(k.rng.IntN(len(k.set.bytes) / keyLength))
	case ZipfKey:
		return k.set.key(k.set.alias.pick(k.rng))
	default:
		return nil
	}
}

// aliasTable chooses index i with probability proportional to its weight
// in constant time (Vose's alias method): pick a column uniformly, then
// keep it with probability keep[i], else take its alias.
type aliasTable struct {
	keep  []float64
	alias []int32
}

// newAliasTable builds the table of weights (each above 0).
func newAliasTable(weights []float64) *aliasTable {
	n := len(weights)
	var sum float64
	for _, w := range weights {
		sum += w
	}
	t := &aliasTable{keep: make([]float64, n), alias: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int32
	for i, w := range weights {
		scaled[i] = w * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.keep[s], t.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large, small = large[:len(large)-1], append(small, l)
		}
	}
	for _, i := range append(small, large...) { // what rounding left: whole columns
		t.keep[i], t.alias[i] = 1, i
	}
	return t
}

// pick returns an index drawn with rng.
func (t *aliasTable) pick(rng *rand.Rand) int {
	i := rng.IntN(len(t.keep))
	if rng.Float64() < t.keep[i] {
		return i
	}
	return int(t.alias[i])
}
