package workload

import (
	"fmt"
	"math"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/payload"
)

// The shape of the messages a workload sends, beyond one size of random
// bytes: a size distribution, keys over a chosen number with a skew, and
// payloads that compress as real data does. brokerbench's own format
// only; OMB's files keep OMB's fields.

// PayloadSpec is what the payload pool of a run of w is generated from.
func (w *Workload) PayloadSpec() payload.Spec {
	s := payload.Spec{Size: w.MessageSize, RandomRatio: w.PayloadRandomRatio, PoolSize: w.PayloadPoolSize, File: w.PayloadFile, Seed: w.Seed,
		Compress: w.Compressibility}
	if w.MessageSizes != nil {
		s.Sizes = *w.MessageSizes
	}
	return s
}

// Keys is how the producers of a run of w choose their keys.
func (w *Workload) Keys() payload.KeySpec {
	return payload.KeySpec{Mode: w.KeyDistributor, Count: w.KeyCount, ZipfS: w.KeyZipfExponent}
}

// MaxMessageSize is the largest message a run of w sends: MessageSize,
// or the top of its size distribution.
func (w *Workload) MaxMessageSize() int {
	if w.MessageSizes != nil {
		return w.MessageSizes.Max()
	}
	return w.MessageSize
}

// validateTraffic checks the message shape's fields against each other,
// and sets MessageSize to the mean size of a size distribution's pool.
func (w *Workload) validateTraffic(bad func(field, format string, args ...any)) {
	if s := w.MessageSizes; s != nil {
		switch err := s.Validate(); {
		case err != nil:
			bad("messageSizes", "%v", err)
		case w.PayloadFile != "":
			bad("messageSizes", "a payloadFile is one payload of one size: leave out either")
		default:
			if err := s.CheckPool(w.PayloadPoolSize); err != nil {
				bad("messageSizes", "%v", err)
			} else if w.meanSize != 0 && w.MessageSize != w.meanSize {
				bad("messageSize", "is the mean of messageSizes (%d bytes) and cannot be set beside it: change messageSizes instead", w.meanSize)
			} else {
				w.MessageSize = int(math.Round(s.Mean(w.PayloadPoolSize)))
				w.meanSize = w.MessageSize
			}
		}
	}
	if c := w.Compressibility; c != nil {
		if err := c.Validate(); err != nil {
			bad("compressibility", "%v", err)
		}
		if w.PayloadFile != "" {
			bad("compressibility", "a payloadFile is sent as it is: leave out either")
		}
	}
	keyed := w.KeyDistributor != payload.NoKey && w.KeyDistributor != ""
	if w.KeyCount != 0 && !keyed {
		bad("keyCount", "applies to a keyDistributor that sends keys, not to %s", payload.NoKey)
	}
	if (w.KeyDistributor == payload.ZipfKey) != (w.KeyZipfExponent != 0) {
		bad("keyZipfExponent", "a keyDistributor of %s needs keyZipfExponent (above 0, 1 is the classic Zipf), and only it takes one", payload.ZipfKey)
	}
	if err := w.Keys().Validate(); err != nil && keyed {
		bad("keyDistributor", "%v", err)
	}
}

// messageSizesField decodes a messageSizes block: buckets (a list of
// {min, max, weight}) or logNormal ({median, sigma, min, max}).
func messageSizesField(dst **payload.Sizes) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s := &payload.Sizes{}
		before := len(d.errs)
		seen := d.mapping(v, key, map[string]fieldSetter{
			"buckets":   bucketsField(&s.Buckets),
			"logNormal": logNormalField(&s.LogNormal),
		})
		if v.Kind == yaml.MappingNode && len(seen) != 1 && len(d.errs) == before {
			d.fail(v, key, "give exactly one of buckets (a list of {min, max, weight}) or logNormal ({median, sigma, min, max})")
		}
		if len(d.errs) == before {
			*dst = s
		}
	}
}

func bucketsField(dst *[]payload.Bucket) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		const field = "messageSizes.buckets"
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			d.fail(v, field, "must be a list of buckets, each {min: BYTES, max: BYTES, weight: N}")
			return
		}
		for i, item := range v.Content {
			var b payload.Bucket
			name := fmt.Sprintf("%s[%d]", field, i)
			seen := d.mapping(item, name, map[string]fieldSetter{
				"min":    prefixed(name, intField(&b.Min, payload.HeaderSize, 100<<20)),
				"max":    prefixed(name, intField(&b.Max, payload.HeaderSize, 100<<20)),
				"weight": prefixed(name, floatField(&b.Weight, 0, math.MaxFloat64)),
			})
			for _, k := range []string{"min", "max", "weight"} {
				if item.Kind == yaml.MappingNode && seen[k] == nil {
					d.fail(item, name+"."+k, "missing: a bucket needs min, max and weight")
				}
			}
			*dst = append(*dst, b)
		}
	}
}

func logNormalField(dst **payload.LogNormal) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		const field = "messageSizes.logNormal"
		l := &payload.LogNormal{}
		seen := d.mapping(v, field, map[string]fieldSetter{
			"median": prefixed(field, floatField(&l.Median, payload.HeaderSize, 100<<20)),
			"sigma":  prefixed(field, floatField(&l.Sigma, 0, 10)),
			"min":    prefixed(field, intField(&l.Min, payload.HeaderSize, 100<<20)),
			"max":    prefixed(field, intField(&l.Max, payload.HeaderSize, 100<<20)),
		})
		if v.Kind != yaml.MappingNode {
			return
		}
		var missing []string
		for _, k := range []string{"median", "sigma", "min", "max"} {
			if seen[k] == nil {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			d.fail(v, field, "missing %s: a log-normal needs median, sigma, min and max", strings.Join(missing, ", "))
			return
		}
		*dst = l
	}
}

func compressibilityField(dst **payload.Compressibility) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		c := &payload.Compressibility{}
		seen := d.mapping(v, key, map[string]fieldSetter{
			"codec": prefixed(key, enumField(&c.Codec, payload.Codecs()...)),
			"ratio": prefixed(key, floatField(&c.Ratio, 0.01, 1)),
		})
		if v.Kind == yaml.MappingNode && (seen["codec"] == nil || seen["ratio"] == nil) {
			d.fail(v, key, "needs codec (%s) and ratio (compressed size over original size, 0.01 to 1)", strings.Join(payload.Codecs(), ", "))
			return
		}
		*dst = c
	}
}

// prefixed names a nested field's errors by its whole path
// ("messageSizes.buckets[1].max").
func prefixed(path string, set fieldSetter) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) { set(d, path+"."+key, v) }
}
