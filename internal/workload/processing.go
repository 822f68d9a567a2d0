package workload

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/processing"
)

// consumerProcessingField decodes consumerProcessingTime: a duration
// ("2ms", each message's time; 0s for none), or a mapping of one shape
// (fixed, uniform {min, max}, logNormal {median, sigma, max}) and an
// optional seed.
func consumerProcessingField(dst **processing.Time) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		before := len(d.errs)
		t := &processing.Time{}
		if v.Kind == yaml.ScalarNode {
			durationField(&t.Fixed, 0)(d, key, v)
		} else {
			seen := d.mapping(v, key, map[string]fieldSetter{
				"fixed":     prefixed(key, durationField(&t.Fixed, time.Nanosecond)),
				"uniform":   uniformField(&t.Uniform),
				"logNormal": logNormalTimeField(&t.LogNormal),
				"seed":      prefixed(key, seedField(&t.Seed)),
			})
			if v.Kind == yaml.MappingNode && len(d.errs) == before && len(seen)-btoi(seen["seed"] != nil) != 1 {
				d.fail(v, key, "give exactly one of fixed (a duration), uniform ({min, max}) or logNormal ({median, sigma, max}), and optionally a seed")
			}
		}
		switch {
		case len(d.errs) > before:
		case *t == (processing.Time{}):
			*dst = nil // 0s: no processing
		default:
			if err := t.Validate(); err != nil {
				d.fail(v, key, "%v", err)
				return
			}
			*dst = t
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func uniformField(dst **processing.Uniform) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		u := &processing.Uniform{}
		if blockFields(d, "consumerProcessingTime.uniform", "a uniform distribution", v, map[string]fieldSetter{
			"min": durationField(&u.Min, 0),
			"max": durationField(&u.Max, 0),
		}, "min", "max") {
			*dst = u
		}
	}
}

func logNormalTimeField(dst **processing.LogNormal) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		l := &processing.LogNormal{}
		if blockFields(d, "consumerProcessingTime.logNormal", "a log-normal", v, map[string]fieldSetter{
			"median": durationField(&l.Median, time.Nanosecond),
			"sigma":  floatField(&l.Sigma, 0, 10),
			"max":    durationField(&l.Max, time.Nanosecond),
		}, "median", "sigma") {
			*dst = l
		}
	}
}
