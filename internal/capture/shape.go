package capture

import (
	"hash/maphash"
	"sort"
	"time"

	"github.com/axiomhq/hyperloglog"
)

// Record is what a capture sees of one message: never kept, only counted.
type Record struct {
	Partition int32
	// Key is nil for a message without a key.
	Key   []byte
	Value []byte
	// HeaderBytes is the size of the message's headers, keys and values.
	HeaderBytes int
	// Time is the message's timestamp.
	Time time.Time
	// Codec is how its producer compressed it: none, gzip, snappy, lz4
	// or zstd.
	Codec string
}

// Bounds of what an Observer keeps, whatever the traffic.
const (
	// MaxDuration bounds a capture: its rate curve holds a count per
	// second, and a workload's curve at most pacer.MaxCurvePoints points.
	MaxDuration = 12 * time.Hour
	// topKCapacity is the number of keys whose counts are tracked.
	topKCapacity = 4096
	// topKept is the number of key counts capture.json keeps.
	topKept = 1000
	// maxPartitions is the highest partition number counted, a
	// workload's largest partitionsPerTopic.
	maxPartitions = 100_000
)

// Observer accumulates the statistics of a topic's messages in bounded
// memory: counts per second, sizes, keys (by hash), headers, codecs,
// partitions and a sample of payloads for their compressibility. It is
// not safe for concurrent use.
type Observer struct {
	// Partitions is the topic's partition count, if the source knows it.
	Partitions int

	origin      time.Time
	perSecond   []int64
	outOfWindow int64
	messages    int64
	bytes       int64
	sizes       sizeHistogram
	seed        maphash.Seed
	distinct    *hyperloglog.Sketch
	top         *TopK
	keyed       int64
	headed      int64
	headerBytes int64
	maxHeader   int
	codecs      map[string]int64
	partitions  []int64
	sample      *payloadSample
}

// NewObserver returns an empty Observer; seed decides the payload sample.
func NewObserver(seed uint64) *Observer {
	return &Observer{
		seed: maphash.MakeSeed(), distinct: hyperloglog.New14(), top: NewTopK(topKCapacity),
		codecs: map[string]int64{}, sample: newPayloadSample(seed),
	}
}

// Observe counts r. The first record's time is the origin of the rate
// curve; a record timestamped before it counts in the first second, one
// more than MaxDuration after it in no second (OutOfWindow).
func (o *Observer) Observe(r Record) {
	if o.messages == 0 {
		o.origin = r.Time
	}
	o.messages++
	sec := max(int64(r.Time.Sub(o.origin)/time.Second), 0)
	if sec < int64(MaxDuration/time.Second) {
		for int64(len(o.perSecond)) <= sec {
			o.perSecond = append(o.perSecond, 0)
		}
		o.perSecond[sec]++
	} else {
		o.outOfWindow++
	}
	o.bytes += int64(len(r.Value))
	o.sizes.add(len(r.Value))
	if r.Key != nil {
		o.keyed++
		h := maphash.Bytes(o.seed, r.Key)
		o.distinct.InsertHash(h)
		o.top.Add(h)
	}
	if r.HeaderBytes > 0 {
		o.headed++
		o.headerBytes += int64(r.HeaderBytes)
		o.maxHeader = max(o.maxHeader, r.HeaderBytes)
	}
	o.codecs[r.Codec]++
	if r.Partition >= 0 && r.Partition < maxPartitions {
		for int32(len(o.partitions)) <= r.Partition {
			o.partitions = append(o.partitions, 0)
		}
		o.partitions[r.Partition]++
	}
	o.sample.add(r.Value)
}

// Shape is what a capture found: capture.json. It holds statistics only,
// never a payload or a key.
type Shape struct {
	Topic string `json:"topic"`
	// Started is when the capture began reading, at the topic's end.
	Started time.Time `json:"started"`
	// FirstMessage is the timestamp of the first message read: the
	// origin of Rate.PerSecond.
	FirstMessage time.Time `json:"firstMessage"`
	// Seconds is how long the capture read.
	Seconds float64 `json:"seconds"`
	// Interrupted: the capture was stopped before its duration.
	Interrupted bool  `json:"interrupted,omitempty"`
	Messages    int64 `json:"messages"`
	// Bytes is the size of the messages' values.
	Bytes       int64            `json:"bytes"`
	Rate        RateStats        `json:"rate"`
	Sizes       SizeStats        `json:"sizes"`
	Keys        KeyStats         `json:"keys"`
	Headers     HeaderStats      `json:"headers"`
	Compression CompressionStats `json:"compression"`
	Partitions  PartitionStats   `json:"partitions"`
}

// RateStats is the rate over time.
type RateStats struct {
	// PerSecond is the messages of each whole second from the first
	// message, by the messages' timestamps; the second the capture ended
	// in, which it saw only part of, is left out.
	PerSecond []int64 `json:"perSecond"`
	// Mean and Peak are over PerSecond, in msg/s.
	Mean float64 `json:"mean"`
	Peak int64   `json:"peak"`
	// OutOfWindow counts messages timestamped too far after the first to
	// count in a second.
	OutOfWindow int64 `json:"outOfWindow,omitempty"`
}

// SizeStats is the distribution of the values' sizes.
type SizeStats struct {
	// Buckets are logarithmic bins (8 per doubling) of the sizes, each
	// with the smallest and largest size seen in it.
	Buckets []SizeBucket `json:"buckets"`
	Mean    float64      `json:"mean"`
	P50     int          `json:"p50"`
	P90     int          `json:"p90"`
	P99     int          `json:"p99"`
	Max     int          `json:"max"`
}

// KeyStats is the key space and its skew.
type KeyStats struct {
	// Keyed and Unkeyed count the messages with and without a key.
	Keyed   int64 `json:"keyed"`
	Unkeyed int64 `json:"unkeyed"`
	// Distinct is the number of distinct keys, estimated with a
	// HyperLogLog sketch (precision 14: about 0.8% standard error).
	Distinct uint64 `json:"distinct"`
	// Top are the counts of the most frequent keys, largest first, from
	// a space-saving sketch of 4096 counters (each count at most Error
	// above the truth).
	Top []KeyCount `json:"top"`
	// ZipfExponent is the exponent of the Zipf distribution over Distinct
	// keys that best explains Top (maximum likelihood); 0 without keys.
	ZipfExponent float64 `json:"zipfExponent"`
	// Uniform: every key was counted, and the counts are what uniformly
	// drawn keys give (LooksUniform).
	Uniform bool `json:"uniform"`
	// TopShare is the share of keyed messages that carried the most
	// frequent key.
	TopShare float64 `json:"topShare"`
}

// HeaderStats is the size of the messages' headers.
type HeaderStats struct {
	// Messages counts the messages that had headers.
	Messages  int64   `json:"messages"`
	MeanBytes float64 `json:"meanBytes"`
	MaxBytes  int     `json:"maxBytes"`
}

// CompressionStats is how the messages were and could be compressed.
type CompressionStats struct {
	// ProducerCodecs counts the messages by the codec their producer
	// compressed them with ("none" for none).
	ProducerCodecs map[string]int64 `json:"producerCodecs"`
	// Sampled payloads (Sampled, SampledBytes) were compressed with each
	// codec: Ratios is compressed size over original size, measured as
	// a replay's payloads are.
	Sampled      int                `json:"sampled"`
	SampledBytes int64              `json:"sampledBytes"`
	Ratios       map[string]float64 `json:"ratios,omitempty"`
}

// PartitionStats is how the messages spread over the partitions.
type PartitionStats struct {
	Count int `json:"count"`
	// Messages counts the messages of each partition.
	Messages []int64 `json:"messages"`
	// Skew is the busiest partition's count over the mean (1: even).
	Skew float64 `json:"skew"`
}

// Shape returns what o counted, for a capture of topic that ran from
// started to ended.
func (o *Observer) Shape(topic string, started, ended time.Time, interrupted bool) *Shape {
	s := &Shape{
		Topic: topic, Started: started.UTC(), Seconds: ended.Sub(started).Seconds(), Interrupted: interrupted,
		Messages: o.messages, Bytes: o.bytes,
	}
	if o.messages > 0 {
		s.FirstMessage = o.origin.UTC()
	}
	s.Rate = o.rate(ended)
	s.Sizes = o.sizeStats()
	s.Keys = o.keyStats()
	if o.headed > 0 {
		s.Headers = HeaderStats{Messages: o.headed, MeanBytes: float64(o.headerBytes) / float64(o.headed), MaxBytes: o.maxHeader}
	}
	s.Compression = CompressionStats{
		ProducerCodecs: o.codecs, Sampled: len(o.sample.values), SampledBytes: o.sample.bytes(), Ratios: o.sample.ratios(),
	}
	s.Partitions = o.partitionStats()
	return s
}

func (o *Observer) rate(ended time.Time) RateStats {
	whole := len(o.perSecond)
	if complete := int(ended.Sub(o.origin) / time.Second); complete < whole && complete > 0 {
		whole = complete
	}
	r := RateStats{PerSecond: append([]int64{}, o.perSecond[:whole]...), OutOfWindow: o.outOfWindow}
	var sum int64
	for _, n := range r.PerSecond {
		sum += n
		r.Peak = max(r.Peak, n)
	}
	if whole > 0 {
		r.Mean = float64(sum) / float64(whole)
	}
	return r
}

func (o *Observer) sizeStats() SizeStats {
	b := o.sizes.buckets()
	s := SizeStats{Buckets: b}
	if len(b) == 0 {
		return s
	}
	s.Mean = float64(o.bytes) / float64(o.messages)
	s.P50, s.P90, s.P99, s.Max = quantile(b, 0.5), quantile(b, 0.9), quantile(b, 0.99), b[len(b)-1].Max
	return s
}

func (o *Observer) keyStats() KeyStats {
	k := KeyStats{Keyed: o.keyed, Unkeyed: o.messages - o.keyed, Top: []KeyCount{}}
	if o.keyed == 0 {
		return k
	}
	counts := o.top.Counts()
	k.Distinct = max(o.distinct.Estimate(), uint64(len(counts)))
	if !o.top.Saturated() {
		// Every key has a counter: the count of distinct keys is exact.
		k.Distinct = uint64(len(counts))
	}
	ranked := make([]int64, len(counts))
	for i, c := range counts {
		ranked[i] = c.Count
	}
	if o.top.Saturated() {
		ranked = ranked[:len(ranked)/2] // the surest counts
	} else {
		k.Uniform = LooksUniform(ranked)
	}
	k.ZipfExponent = FitZipf(ranked, o.keyed, int(min(k.Distinct, 1<<31)))
	k.TopShare = float64(counts[0].Count) / float64(o.keyed)
	k.Top = counts[:min(len(counts), topKept)]
	return k
}

func (o *Observer) partitionStats() PartitionStats {
	p := PartitionStats{Count: max(o.Partitions, len(o.partitions))}
	p.Messages = make([]int64, p.Count)
	copy(p.Messages, o.partitions)
	var most int64
	for _, n := range p.Messages {
		most = max(most, n)
	}
	if o.messages > 0 && p.Count > 0 {
		p.Skew = float64(most) / (float64(o.messages) / float64(p.Count))
	}
	return p
}

// sortedCodecs returns the codecs of counts, most messages first.
func sortedCodecs(counts map[string]int64) []string {
	names := make([]string, 0, len(counts))
	for c := range counts {
		names = append(names, c)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}
