package payload

import (
	"errors"
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
	// Sizes, when not zero, gives each payload of the pool its own size
	// from this distribution, in place of Size.
	Sizes Sizes
	// Compress, when set, fills the payloads so that they compress to its
	// ratio with its codec, in place of RandomRatio.
	Compress *Compressibility
}

// Pool is a generated payload pool and what was measured of it.
type Pool struct {
	// Payloads, each with HeaderSize bytes at its start left for Put.
	Payloads [][]byte
	// Ratio is the compressed size over the original size measured with
	// Spec.Compress's codec (0 without a target).
	Ratio float64
}

// Generate returns the payload pool described by s: each payload Size
// bytes long, or of a size from s.Sizes, its first HeaderSize bytes left
// for Put to overwrite; and what was measured of it (the compression
// ratio reached for s.Compress).
func Generate(s Spec) (Pool, error) {
	if s.Sizes.IsZero() && s.Size < HeaderSize {
		return Pool{}, fmt.Errorf("message size %d is below the %d-byte brokerbench header: use a size of at least %d", s.Size, HeaderSize, HeaderSize)
	}
	if s.File != "" {
		data, err := readFile(s)
		return Pool{Payloads: [][]byte{data}}, err
	}
	if s.RandomRatio < 0 || s.RandomRatio > 1 {
		return Pool{}, fmt.Errorf("random ratio %v is outside [0, 1]", s.RandomRatio)
	}
	n := max(s.PoolSize, 1)
	sizes := make([]int, n)
	if s.Sizes.IsZero() {
		for i := range sizes {
			sizes[i] = s.Size
		}
	} else {
		if err := errors.Join(s.Sizes.Validate(), s.Sizes.CheckPool(n)); err != nil {
			return Pool{}, fmt.Errorf("message sizes: %w", err)
		}
		sizes = s.Sizes.shuffledSizes(n, s.Seed)
	}
	pool := make([][]byte, n)
	for i := range pool {
		pool[i] = make([]byte, sizes[i])
	}
	if s.Compress != nil {
		ratio, err := fillCompressible(pool, *s.Compress, s.Seed)
		return Pool{Payloads: pool, Ratio: ratio}, err
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	for _, p := range pool {
		body := len(p) - HeaderSize
		randomBytes := int(float64(body)*s.RandomRatio + 0.5)
		for j := HeaderSize; j < HeaderSize+randomBytes; j++ {
			p[j] = byte(rng.Uint32())
		}
	}
	return Pool{Payloads: pool}, nil
}

// readFile reads the single payload s.File names, which must be s.Size
// bytes long.
func readFile(s Spec) ([]byte, error) {
	data, err := os.ReadFile(s.File)
	if err != nil {
		return nil, fmt.Errorf("read payload file: %w", err)
	}
	if len(data) != s.Size {
		return nil, fmt.Errorf("payload file %s is %d bytes but the message size is %d: make them equal", s.File, len(data), s.Size)
	}
	return data, nil
}
