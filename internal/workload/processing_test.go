package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/processing"
)

// TestConsumerProcessingTime: each form of consumerProcessingTime is read
// into its shape; 0s is none.
func TestConsumerProcessingTime(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want *processing.Time
	}{
		// A duration is a fixed time.
		{"consumerProcessingTime: 2ms\n", &processing.Time{Fixed: 2 * time.Millisecond}},
		// 0s is no processing at all.
		{"consumerProcessingTime: 0s\n", nil},
		{"consumerProcessingTime: {fixed: 500us}\n", &processing.Time{Fixed: 500 * time.Microsecond}},
		{"consumerProcessingTime:\n  uniform: {min: 1ms, max: 3ms}\n  seed: 7\n",
			&processing.Time{Uniform: &processing.Uniform{Min: time.Millisecond, Max: 3 * time.Millisecond}, Seed: 7}},
		{"consumerProcessingTime:\n  logNormal: {median: 2ms, sigma: 0.5, max: 50ms}\n",
			&processing.Time{LogNormal: &processing.LogNormal{Median: 2 * time.Millisecond, Sigma: 0.5, Max: 50 * time.Millisecond}}},
	} {
		w, err := Parse("t.yaml", []byte(trafficBase+c.yaml))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		got := w.ConsumerProcessingTime
		switch {
		case (got == nil) != (c.want == nil):
			t.Errorf("%q: %+v, want %+v", c.yaml, got, c.want)
		case got != nil && (got.Fixed != c.want.Fixed || got.Seed != c.want.Seed || got.Mean() != c.want.Mean()):
			t.Errorf("%q: %+v (mean %s), want %+v (mean %s)", c.yaml, got, got.Mean(), c.want, c.want.Mean())
		}
	}
	// A sweep or a flag sets it as text.
	w, err := Parse("t.yaml", []byte(trafficBase))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetField("study.yaml", 3, "consumerProcessingTime", "5ms"); err != nil || w.ConsumerProcessingTime.Fixed != 5*time.Millisecond {
		t.Errorf("SetField 5ms: %+v, %v", w.ConsumerProcessingTime, err)
	}
}

// TestConsumerProcessingTimeErrors: each mistake names its field and line.
func TestConsumerProcessingTimeErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"consumerProcessingTime: fast\n", `t.yaml:4: field "consumerProcessingTime": must be a duration`},
		{"consumerProcessingTime: -2ms\n", "must be at least 0s"},
		{"consumerProcessingTime: 2h\n", "fixed: must be between 0s and 1m0s"},
		{"consumerProcessingTime: {seed: 3}\n", "give exactly one of fixed"},
		{"consumerProcessingTime: {fixed: 1ms, uniform: {min: 1ms, max: 2ms}}\n", "give exactly one of fixed"},
		{"consumerProcessingTime:\n  uniform: {min: 3ms}\n", `field "consumerProcessingTime.uniform.max": missing`},
		{"consumerProcessingTime:\n  uniform: {min: 3ms, max: 1ms}\n", "uniform.max: 1ms is below its min 3ms"},
		{"consumerProcessingTime:\n  logNormal: {median: 2ms}\n", "missing: a log-normal needs median, sigma"},
		{"consumerProcessingTime:\n  logNormal: {median: 2ms, sigma: 0.5, max: 1ms}\n", "logNormal.max: 1ms is below its median 2ms"},
		{"consumerProcessingTime:\n  normal: {mean: 2ms}\n", "unknown field"},
		{"consumersPerSubscription: 0\nconsumerProcessingTime: 2ms\n", "no consumers to spend it"},
	} {
		_, err := Parse("t.yaml", []byte(trafficBase+c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}
