package payload

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compressibility is a target for how well a pool's payloads compress:
// Ratio is the compressed size over the original size (0.6: to 60%) with
// Codec, measured as a producer's batches are compressed (see Ratio).
// Random payloads compress to about 1, a payload of zeros to almost 0;
// real data lies between, and a benchmark of a codec on either end says
// little about it.
type Compressibility struct {
	Codec string  `json:"codec"`
	Ratio float64 `json:"ratio"`
}

// BatchBytes is the size of the chunks of consecutive payloads Ratio
// compresses: Kafka's default batch.size, the unit a producer compresses.
const BatchBytes = 16 << 10

// ratioTolerance is how far a pool's measured ratio may be from its
// target.
const ratioTolerance = 0.03

// codecs compress src with the named codec at its clients' default
// level, as Kafka names them.
var codecs = map[string]func(src []byte) ([]byte, error){
	"gzip": func(src []byte) ([]byte, error) {
		var out bytes.Buffer
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		w.Reset(&out)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		err := w.Close()
		return out.Bytes(), err
	},
	"snappy": func(src []byte) ([]byte, error) { return s2.EncodeSnappy(nil, src), nil },
	"lz4": func(src []byte) ([]byte, error) {
		dst := make([]byte, lz4.CompressBlockBound(len(src)))
		c := lz4Compressors.Get().(*lz4.Compressor)
		defer lz4Compressors.Put(c)
		n, err := c.CompressBlock(src, dst)
		if n == 0 && err == nil { // incompressible: stored as it is
			n = len(src)
		}
		return dst[:n], err
	},
	"zstd": func(src []byte) ([]byte, error) { return zstdEncoder().EncodeAll(src, nil), nil },
}

// gzipWriters and lz4Compressors keep the codecs' state (about 1 MB for a
// gzip writer, 64 KB for an lz4 compressor) from one call to the next:
// made anew each time, they made Ratio 5.7 times slower with gzip and 3.4
// times with lz4 (BenchmarkRatio).
var (
	gzipWriters    = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}
)

// zstdEncoder is the process's zstd encoder at the default level, made on
// first use; EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		panic(err) // only for options that are invalid, and these are fixed
	}
	return enc
})

// Codecs lists the codecs a compressibility target may name.
func Codecs() []string {
	names := make([]string, 0, len(codecs))
	for name := range codecs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Validate returns an error saying what is wrong with c, or nil.
func (c Compressibility) Validate() error {
	if _, ok := codecs[c.Codec]; !ok {
		return fmt.Errorf("codec: %q is not one brokerbench can measure with: use one of %s", c.Codec, strings.Join(Codecs(), ", "))
	}
	if !(c.Ratio > 0 && c.Ratio <= 1) {
		return fmt.Errorf("ratio: must be above 0 and at most 1 (compressed size over original size), got %v", c.Ratio)
	}
	return nil
}

// Ratio compresses pool with codec in batches of consecutive payloads
// (BatchBytes each, the last one shorter), each payload carrying a header
// as a producer would write it, and returns the compressed size over the
// original size.
func Ratio(pool [][]byte, codec string) (float64, error) {
	compress, ok := codecs[codec]
	if !ok {
		return 0, fmt.Errorf("unknown codec %q: use one of %s", codec, strings.Join(Codecs(), ", "))
	}
	var raw, packed int
	batch := make([]byte, 0, BatchBytes+Max(pool))
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := compress(batch)
		if err != nil {
			return fmt.Errorf("compress with %s: %w", codec, err)
		}
		raw, packed, batch = raw+len(batch), packed+len(out), batch[:0]
		return nil
	}
	for i, p := range pool {
		start := len(batch)
		batch = append(batch, p...)
		Put(batch[start:], Header{ProducerID: 1, Seq: uint64(i), SendTime: 1_700_000_000_000_000_000 + int64(i)*100_000})
		if len(batch) >= BatchBytes {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	if raw == 0 {
		return 0, nil
	}
	return float64(packed) / float64(raw), nil
}

// Max returns the length of the longest payload of pool.
func Max(pool [][]byte) int {
	most := 0
	for _, p := range pool {
		most = max(most, len(p))
	}
	return most
}

// sampleBytes bounds the part of a pool the search for a compressibility
// tunes on, so that a pool of large payloads is compressed a few times
// over at most this much.
const sampleBytes = 4 << 20

// fillCompressible fills the bodies (what follows the header) of pool to
// reach target, and returns the ratio measured over at most sampleBytes of
// it. A body is made of runs of 64 bytes: a run is random (incompressible)
// with probability literal, else a copy of one of 16 words shared by the
// pool, which every codec finds again; literal is searched by bisection.
func fillCompressible(pool [][]byte, target Compressibility, seed uint64) (float64, error) {
	if err := target.Validate(); err != nil {
		return 0, err
	}
	sample := pool
	for i, total := 0, 0; i < len(pool); i++ {
		if total += len(pool[i]); total >= sampleBytes {
			sample = pool[:i+1]
			break
		}
	}
	measure := func(part [][]byte, literal float64) (float64, error) {
		fillRuns(part, literal, seed)
		return Ratio(part, target.Codec)
	}
	lo, hi := 0.0, 1.0
	low, err := measure(sample, lo)
	if err != nil {
		return 0, err
	}
	high, err := measure(sample, hi)
	if err != nil {
		return 0, err
	}
	if target.Ratio < low-ratioTolerance || target.Ratio > high+ratioTolerance {
		return 0, fmt.Errorf("compressibility: %s cannot compress these payloads to %.2f: the ratios reachable at these sizes run from %.2f to %.2f (small messages carry a header and framing that do not compress)",
			target.Codec, target.Ratio, low, high)
	}
	for range 14 {
		mid := (lo + hi) / 2
		r, err := measure(sample, mid)
		if err != nil {
			return 0, err
		}
		if r < target.Ratio {
			lo = mid
		} else {
			hi = mid
		}
	}
	literal := (lo + hi) / 2
	got, err := measure(pool, literal)
	if err != nil {
		return 0, err
	}
	if len(sample) < len(pool) {
		if got, err = Ratio(sample, target.Codec); err != nil {
			return 0, err
		}
	}
	if math.Abs(got-target.Ratio) > ratioTolerance {
		return got, fmt.Errorf("compressibility: the closest %s ratio brokerbench could make for these payloads is %.2f, not %.2f", target.Codec, got, target.Ratio)
	}
	return got, nil
}

// fillRuns writes the bodies of pool as runs of 64 bytes, each random
// with probability literal, else one of 16 shared words; the same seed
// gives the same bodies for the same literal.
func fillRuns(pool [][]byte, literal float64, seed uint64) {
	const run, words = 64, 16
	rng := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	table := make([]byte, run*words)
	for i := range table {
		table[i] = byte(rng.Uint32())
	}
	for _, p := range pool {
		body := p[min(HeaderSize, len(p)):]
		for at := 0; at < len(body); at += run {
			end := min(at+run, len(body))
			if rng.Float64() < literal {
				for j := at; j < end; j++ {
					body[j] = byte(rng.Uint32())
				}
				continue
			}
			w := rng.IntN(words) * run
			copy(body[at:end], table[w:w+run])
		}
	}
}
