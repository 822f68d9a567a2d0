// Package maxrate finds the highest producer rate a broker sustains: it
// ramps and bisects over fixed-rate runs, and accepts a rate only if the run
// held it, met the latency objectives and kept the consumers' backlog
// bounded.
package maxrate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
)

// Objective is one latency objective: a percentile of a latency below a
// limit, e.g. publish p99 < 50 ms.
type Objective struct {
	// Metric is "publish" or "e2e".
	Metric     string
	Percentile float64 // 50, 99, 99.9, ...; 100 means max
	Limit      time.Duration
}

// String formats o in the syntax ParseSLO reads.
func (o Objective) String() string {
	p := "p" + strconv.FormatFloat(o.Percentile, 'f', -1, 64)
	if o.Percentile == 100 {
		p = "max"
	}
	return fmt.Sprintf("%s.%s<%s", o.Metric, p, o.Limit)
}

// ErrSLO reports an SLO expression that cannot be parsed.
var ErrSLO = errors.New("invalid SLO")

// percentiles are those a results Latency summary holds.
var percentiles = map[string]float64{"p50": 50, "p75": 75, "p95": 95, "p99": 99, "p99.9": 99.9, "p99.99": 99.99, "max": 100}

// ParseSLO reads a comma-separated list of objectives such as
// "p99<50ms,e2e.p99.9<200ms". A term is [METRIC.]PERCENTILE<DURATION, where
// METRIC is publish (the default) or e2e, PERCENTILE one of p50, p75, p95,
// p99, p99.9, p99.99 or max, and DURATION a Go duration (500us, 50ms, 1s).
func ParseSLO(s string) ([]Objective, error) {
	var out []Objective
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		lhs, rhs, ok := strings.Cut(term, "<")
		if !ok {
			return nil, fmt.Errorf("%w %q: want PERCENTILE<DURATION, e.g. p99<50ms", ErrSLO, term)
		}
		o := Objective{Metric: "publish"}
		lhs = strings.TrimSpace(lhs)
		if m, p, ok := strings.Cut(lhs, "."); ok && (m == "publish" || m == "e2e") {
			o.Metric, lhs = m, p
		}
		pct, ok := percentiles[lhs]
		if !ok {
			return nil, fmt.Errorf("%w %q: percentile %q is not one of p50, p75, p95, p99, p99.9, p99.99, max (metric prefix publish. or e2e.)", ErrSLO, term, lhs)
		}
		o.Percentile = pct
		d, err := time.ParseDuration(strings.TrimSpace(rhs))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w %q: limit %q is not a positive duration such as 50ms", ErrSLO, term, strings.TrimSpace(rhs))
		}
		o.Limit = d
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %q: no objective given, e.g. p99<50ms", ErrSLO, s)
	}
	return out, nil
}

// value returns the percentile of l that o names, in milliseconds.
func (o Objective) value(l metrics.Latency) float64 {
	switch o.Percentile {
	case 50:
		return l.P50
	case 75:
		return l.P75
	case 95:
		return l.P95
	case 99:
		return l.P99
	case 99.9:
		return l.P999
	case 99.99:
		return l.P9999
	default:
		return l.Max
	}
}
