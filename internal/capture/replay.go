package capture

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Replay is a workload that replays a captured Shape: the workload file
// and the rate curve file it names.
type Replay struct {
	Workload []byte
	Curve    []byte
	// Notes say where the replay departs from the capture.
	Notes []string
}

// Replay choices.
const (
	// ratePerProducer is the rate each producer of a replay is given at
	// the capture's peak.
	ratePerProducer = 50_000
	// minPoolSize is the smallest payload pool of a replay.
	minPoolSize = 1000
	// maxPoolSize is the largest, a workload's largest payloadPoolSize.
	maxPoolSize = 100_000
)

// replayFile is a workload file's fields, in the order a reader wants
// them.
type replayFile struct {
	Name                     string          `yaml:"name"`
	Description              string          `yaml:"description"`
	Topics                   int             `yaml:"topics"`
	PartitionsPerTopic       int             `yaml:"partitionsPerTopic"`
	ProducersPerTopic        int             `yaml:"producersPerTopic"`
	SubscriptionsPerTopic    int             `yaml:"subscriptionsPerTopic"`
	ConsumersPerSubscription int             `yaml:"consumersPerSubscription"`
	RateProfile              replayProfile   `yaml:"rateProfile"`
	Warmup                   string          `yaml:"warmup"`
	Duration                 string          `yaml:"duration"`
	MessageSizes             replaySizes     `yaml:"messageSizes"`
	PayloadPoolSize          int             `yaml:"payloadPoolSize"`
	Compressibility          *replayCompress `yaml:"compressibility,omitempty"`
	KeyDistributor           payload.KeyMode `yaml:"keyDistributor"`
	KeyCount                 int             `yaml:"keyCount,omitempty"`
	KeyZipfExponent          float64         `yaml:"keyZipfExponent,omitempty"`
}

type replayProfile struct {
	Curve string `yaml:"curve"`
}

type replaySizes struct {
	Buckets []replayBucket `yaml:"buckets"`
}

type replayBucket struct {
	Min    int   `yaml:"min"`
	Max    int   `yaml:"max"`
	Weight int64 `yaml:"weight"`
}

type replayCompress struct {
	Codec string  `yaml:"codec"`
	Ratio float64 `yaml:"ratio"`
}

// ErrNothingCaptured is returned by Replay for a capture that read no
// message: there is no shape to replay.
var ErrNothingCaptured = errors.New("no message was written to the topic while it was captured: there is no shape to replay")

// Replay returns the workload named name that replays s, its rate curve
// in the file curveFile (a path relative to the workload file): one
// topic of s's partitions, the per-second rate as a stepped curve, the
// sizes as weighted buckets, the keys as ZIPF (or uniform, or none) over
// the distinct keys seen, and, when compress is set, the payloads'
// compressibility with the producers' codec (zstd if they used none).
// Whether payloads of the replay's sizes can reach that compressibility
// is known only once they are made (see write).
func (s *Shape) Replay(name, curveFile string, compress bool) (*Replay, error) {
	perSecond := trimZeros(s.Rate.PerSecond)
	if s.Messages == 0 || len(perSecond) == 0 {
		return nil, ErrNothingCaptured
	}
	r := &Replay{Curve: curveCSV(perSecond)}
	f := replayFile{
		Name: name,
		Description: fmt.Sprintf("the shape of topic %s captured at %s: %d messages in %d s", s.Topic,
			s.Started.Format(time.RFC3339), s.Messages, len(perSecond)),
		Topics: 1, PartitionsPerTopic: max(s.Partitions.Count, 1),
		ProducersPerTopic:     int(min(math.Ceil(float64(s.Rate.Peak)/ratePerProducer), 100)),
		SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1,
		RateProfile: replayProfile{Curve: curveFile},
		Warmup:      "0s", Duration: fmt.Sprintf("%ds", len(perSecond)),
	}
	f.ProducersPerTopic = max(f.ProducersPerTopic, 1)
	buckets, pool, notes := replayBuckets(s.Sizes)
	f.MessageSizes, f.PayloadPoolSize = replaySizes{Buckets: buckets}, pool
	r.Notes = append(r.Notes, notes...)
	f.KeyDistributor, f.KeyCount, f.KeyZipfExponent, notes = replayKeys(s.Keys)
	r.Notes = append(r.Notes, notes...)
	if compress {
		f.Compressibility, notes = replayCompressibility(s.Compression)
		r.Notes = append(r.Notes, notes...)
	}
	var out bytes.Buffer
	out.WriteString("# Written by 'brokerbench capture': the captured topic's shape, to replay with 'brokerbench run'.\n")
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("write the replay workload: %w", err)
	}
	r.Workload = out.Bytes()
	return r, nil
}

// trimZeros returns counts without its trailing zeros: a replay ends
// with the last message.
func trimZeros(counts []int64) []int64 {
	end := len(counts)
	for end > 0 && counts[end-1] == 0 {
		end--
	}
	return counts[:end]
}

// curveCSV writes per-second counts as a stepped rate curve: each
// second's count holds for that second, two points at one time making
// each step.
func curveCSV(perSecond []int64) []byte {
	var b bytes.Buffer
	b.WriteString("seconds,rate\n")
	for i, n := range perSecond {
		if i > 0 && n == perSecond[i-1] {
			continue
		}
		if i > 0 {
			fmt.Fprintf(&b, "%d,%d\n", i, perSecond[i-1])
		}
		fmt.Fprintf(&b, "%d,%d\n", i, n)
	}
	return b.Bytes()
}

// replayBuckets turns the size bins into a replay's buckets and payload
// pool size: the pool large enough to hold the lightest bucket (up to
// maxPoolSize and the payload memory bound), bins too light for it merged
// into their neighbours, sizes below the brokerbench header raised to it.
func replayBuckets(s SizeStats) ([]replayBucket, int, []string) {
	var notes []string
	var total, lightest int64 = 0, math.MaxInt64
	var below int64
	for _, b := range s.Buckets {
		total += b.Count
		lightest = min(lightest, b.Count)
		if b.Min < payload.HeaderSize {
			below += b.Count
		}
	}
	if below > 0 {
		notes = append(notes, fmt.Sprintf("%d messages (%.2g%%) were smaller than the %d-byte brokerbench header: replayed at %d bytes",
			below, 100*float64(below)/float64(total), payload.HeaderSize, payload.HeaderSize))
	}
	pool := int(min(max(math.Ceil(float64(total)/float64(lightest)), minPoolSize), maxPoolSize))
	if s.Mean > 0 {
		pool = min(pool, int(workload.MaxPayloadMemory/max(s.Mean, payload.HeaderSize)))
	}
	pool = max(pool, 1)
	// Each bucket needs a weight share of at least one payload of the pool.
	least := int64(math.Ceil(float64(total) / float64(pool)))
	var out []replayBucket
	var cur replayBucket
	merged := 0
	for _, b := range s.Buckets {
		if cur.Weight == 0 {
			cur = replayBucket{Min: max(b.Min, payload.HeaderSize), Max: max(b.Max, payload.HeaderSize)}
		} else {
			merged++
		}
		cur.Max, cur.Weight = max(b.Max, payload.HeaderSize), cur.Weight+b.Count
		if cur.Weight >= least {
			out, cur = append(out, cur), replayBucket{}
		}
	}
	if cur.Weight > 0 {
		if len(out) == 0 {
			out = append(out, cur)
		} else {
			last := &out[len(out)-1]
			last.Max, last.Weight = cur.Max, last.Weight+cur.Weight
			merged++
		}
	}
	if merged > 0 {
		notes = append(notes, fmt.Sprintf("%d size bins too light for a pool of %d payloads were merged into their neighbours", merged, pool))
	}
	return out, pool, notes
}

// replayKeys chooses the key distributor of a replay.
func replayKeys(k KeyStats) (payload.KeyMode, int, float64, []string) {
	if k.Keyed == 0 {
		return payload.NoKey, 0, 0, nil
	}
	var notes []string
	if k.Unkeyed > k.Keyed {
		return payload.NoKey, 0, 0, []string{fmt.Sprintf("only %d of %d messages had a key: replayed without keys", k.Keyed, k.Keyed+k.Unkeyed)}
	}
	if k.Unkeyed > 0 {
		notes = append(notes, fmt.Sprintf("%d messages had no key: replayed with one", k.Unkeyed))
	}
	count := int(min(k.Distinct, payload.MaxKeyCount))
	if k.Distinct > payload.MaxKeyCount {
		notes = append(notes, fmt.Sprintf("about %d distinct keys: replayed with %d, the most a workload has", k.Distinct, payload.MaxKeyCount))
	}
	if k.Uniform || k.ZipfExponent < minZipfExponent*2 {
		return payload.RandomKey, max(count, 1), 0, notes
	}
	return payload.ZipfKey, max(count, 1), math.Round(k.ZipfExponent*1000) / 1000, notes
}

// replayCompressibility returns the compressibility target of a replay:
// the producers' dominant codec (zstd if none) at the ratio the sample
// had with it.
func replayCompressibility(c CompressionStats) (*replayCompress, []string) {
	codec := "zstd"
	for _, name := range sortedCodecs(c.ProducerCodecs) {
		if name != "none" {
			codec = name
			break
		}
	}
	ratio, ok := c.Ratios[codec]
	if !ok {
		return nil, []string{"no payload was sampled: the replay's payloads are random"}
	}
	return &replayCompress{Codec: codec, Ratio: min(max(math.Round(ratio*100)/100, 0.01), 1)}, nil
}
