package payload

import (
	"fmt"
	"math/rand/v2"
	"os"
)

// Spec describes how payloads are generated before a run.
type Spec struct {
	// Size is the total message value size in bytes, header included.
	Size int
	// RandomRatio is the fraction of each payload (after the header) filled
	// with random bytes; the rest is zeros. 1 gives incompressible payloads,
	// 0 gives payloads that compress almost entirely.
	RandomRatio float64
	// PoolSize is the number of distinct payloads generated (at least 1).
	PoolSize int
	// File, when set, is read and used as the single payload; its length
	// must equal Size.
	File string
	// Seed makes generation reproducible.
	Seed uint64
}

// Generate returns the payload pool described by s. Each payload is Size
// bytes long; the first HeaderSize bytes are left for Put to overwrite.
func Generate(s Spec) ([][]byte, error) {
	if s.Size < HeaderSize {
		return nil, fmt.Errorf("message size %d is below the %d-byte brokerbench header: use a size of at least %d", s.Size, HeaderSize, HeaderSize)
	}
	if s.File != "" {
		data, err := os.ReadFile(s.File)
		if err != nil {
			return nil, fmt.Errorf("read payload file: %w", err)
		}
		if len(data) != s.Size {
			return nil, fmt.Errorf("payload file %s is %d bytes but the message size is %d: make them equal", s.File, len(data), s.Size)
		}
		return [][]byte{data}, nil
	}
	if s.RandomRatio < 0 || s.RandomRatio > 1 {
		return nil, fmt.Errorf("random ratio %v is outside [0, 1]", s.RandomRatio)
	}
	n := max(s.PoolSize, 1)
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	pool := make([][]byte, n)
	body := s.Size - HeaderSize
	randomBytes := int(float64(body)*s.RandomRatio + 0.5)
	for i := range pool {
		p := make([]byte, s.Size)
		for j := HeaderSize; j < HeaderSize+randomBytes; j++ {
			p[j] = byte(rng.Uint32())
		}
		pool[i] = p
	}
	return pool, nil
}

// KeyMode selects how message keys are chosen.
type KeyMode string

// Key modes, named after OpenMessaging Benchmark's key distributors.
const (
	NoKey      KeyMode = "NO_KEY"
	RoundRobin KeyMode = "KEY_ROUND_ROBIN"
	RandomKey  KeyMode = "RANDOM_NANO"
)

// keyCount is the number of distinct keys generated for keyed modes.
const keyCount = 10000

// Keys chooses message keys without allocating per message. A Keys value is
// owned by one producer goroutine and is not safe for concurrent use.
type Keys struct {
	mode KeyMode
	keys [][]byte
	next int
	rng  *rand.Rand
}

// NewKeys pre-generates the keys for mode. seed makes the keys and the random
// choice among them reproducible.
func NewKeys(mode KeyMode, seed uint64) (*Keys, error) {
	k := &Keys{mode: mode, rng: rand.New(rand.NewPCG(seed, 0xda3e39cb94b95bdb))}
	switch mode {
	case NoKey, "":
		k.mode = NoKey
		return k, nil
	case RoundRobin, RandomKey:
	default:
		return nil, fmt.Errorf("unknown key distributor %q: use NO_KEY, KEY_ROUND_ROBIN or RANDOM_NANO", mode)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	k.keys = make([][]byte, keyCount)
	for i := range k.keys {
		key := make([]byte, 7)
		for j := range key {
			key[j] = alphabet[k.rng.IntN(len(alphabet))]
		}
		k.keys[i] = key
	}
	return k, nil
}

// Next returns the key for the next message, or nil for NoKey.
func (k *Keys) Next() []byte {
	switch k.mode {
	case RoundRobin:
		key := k.keys[k.next]
		k.next = (k.next + 1) % len(k.keys)
		return key
	case RandomKey:
		return k.keys[k.rng.IntN(len(k.keys))]
	default:
		return nil
	}
}
