package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks a YAML mapping against a table of known fields, collecting
// every problem with its line number instead of stopping at the first.
type decoder struct {
	file string
	errs []error
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &FieldError{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// fieldSetter decodes one field's value node. It reports problems through the
// decoder and returns nothing.
type fieldSetter func(d *decoder, key string, value *yaml.Node)

// mapping applies the setters in fields to each key of the mapping node n.
// Unknown and duplicate keys are reported. It returns the set of keys seen.
func (d *decoder) mapping(n *yaml.Node, what string, fields map[string]fieldSetter) map[string]*yaml.Node {
	seen := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		d.fail(n, "", "%s must be a YAML mapping of field: value", what)
		return seen
	}
	known := sortedKeys(fields)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		if prev, dup := seen[name]; dup {
			d.fail(k, name, "duplicate field (first set on line %d)", prev.Line)
			continue
		}
		seen[name] = k
		set, ok := fields[name]
		if !ok {
			d.fail(k, name, "unknown field in %s%s; allowed fields: %s", what, suggest(name, known), strings.Join(known, ", "))
			continue
		}
		set(d, name, v)
	}
	return seen
}

func scalar(d *decoder, key string, v *yaml.Node, kind string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		d.fail(v, key, "must be %s", kind)
		return "", false
	}
	return v.Value, true
}

func intField(dst *int, lo, hi int) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, "an integer")
		if !ok {
			return
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil {
			d.fail(v, key, "must be an integer, got %q", s)
			return
		}
		if n < int64(lo) || n > int64(hi) {
			d.fail(v, key, "must be between %d and %d, got %d", lo, hi, n)
			return
		}
		*dst = int(n)
	}
}

func floatField(dst *float64, lo, hi float64) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, "a number")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(v, key, "must be a number, got %q", s)
			return
		}
		if f < lo || f > hi {
			d.fail(v, key, "must be between %v and %v, got %v", lo, hi, f)
			return
		}
		*dst = f
	}
}

func stringField(dst *string) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		if s, ok := scalar(d, key, v, "a string"); ok {
			*dst = s
		}
	}
}

func boolField(dst *bool) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, "true or false")
		if !ok {
			return
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			d.fail(v, key, "must be true or false, got %q", s)
			return
		}
		*dst = b
	}
}

func enumField(dst *string, allowed ...string) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, "one of "+strings.Join(allowed, ", "))
		if !ok {
			return
		}
		for _, a := range allowed {
			if s == a {
				*dst = s
				return
			}
		}
		d.fail(v, key, "must be one of %s, got %q%s", strings.Join(allowed, ", "), s, suggest(s, allowed))
	}
}

// durationField accepts Go durations such as "90s" or "1m30s".
func durationField(dst *time.Duration, minimum time.Duration) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		s, ok := scalar(d, key, v, `a duration such as "30s" or "5m"`)
		if !ok {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.fail(v, key, `must be a duration such as "30s" or "5m", got %q`, s)
			return
		}
		if dur < minimum {
			d.fail(v, key, "must be at least %s, got %s", minimum, dur)
			return
		}
		*dst = dur
	}
}

// minutesField accepts a number of minutes, as OpenMessaging Benchmark does.
func minutesField(dst *time.Duration) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		var f float64
		floatField(&f, 0, 7*24*60)(d, key, v)
		*dst = time.Duration(f * float64(time.Minute))
	}
}
