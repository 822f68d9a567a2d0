package capture

import (
	"math/rand/v2"

	"github.com/brokerbench/brokerbench/internal/payload"
)

// Bounds of the payload sample the compressibility is measured on: at
// most sampleSlots payloads, of each its first samplePrefix bytes (a
// producer compresses batches of payload.BatchBytes, so a longer payload's
// prefix compresses as the payload does): 16 MiB at most.
const (
	sampleSlots  = 1000
	samplePrefix = payload.BatchBytes
)

// payloadSample is a uniform sample of a stream of payloads (reservoir
// sampling, Vitter's algorithm R), kept only in memory to measure how
// they compress. It is not safe for concurrent use.
type payloadSample struct {
	rng    *rand.Rand
	seen   int64
	values [][]byte
}

func newPayloadSample(seed uint64) *payloadSample {
	return &payloadSample{rng: rand.New(rand.NewPCG(seed, 0x853c49e6748fea9b))}
}

// add offers value to the sample; values shorter than the brokerbench
// header, which a replay cannot send, are left out.
func (s *payloadSample) add(value []byte) {
	if len(value) < payload.HeaderSize {
		return
	}
	value = value[:min(len(value), samplePrefix)]
	s.seen++
	if len(s.values) < sampleSlots {
		s.values = append(s.values, append([]byte(nil), value...))
		return
	}
	if j := s.rng.Int64N(s.seen); j < sampleSlots {
		s.values[j] = append(s.values[j][:0], value...)
	}
}

// bytes is the size of the sample.
func (s *payloadSample) bytes() int64 {
	var n int64
	for _, v := range s.values {
		n += int64(len(v))
	}
	return n
}

// ratios returns the compressed size over the original size of the
// sample with every codec payload measures with (payload.Ratio: batches
// of consecutive payloads, each with a header as a producer writes it);
// nil for an empty sample.
func (s *payloadSample) ratios() map[string]float64 {
	if len(s.values) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, codec := range payload.Codecs() {
		if r, err := payload.Ratio(s.values, codec); err == nil {
			out[codec] = r
		}
	}
	return out
}
