package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"
)

// ombIntervalSeconds is OMB's reporting interval: each entry of its
// TestResult's publishRate series is the rate over one interval of about
// 10 s of the measurement (its warmup left out).
const ombIntervalSeconds = 10

// ombResult is what the comparison reads from OMB's TestResult JSON.
type ombResult struct {
	// Published is the number of messages acknowledged in the
	// measurement, as far as OMB's result says: the rates times its 10 s
	// interval. Each interval is 10 s plus the time OMB took to collect
	// its figures, which a busy machine stretches by seconds (a one-minute
	// run then has fewer than six), so this undercounts by that much.
	Published int64
	// Rate is the mean publish rate over the measurement's intervals.
	Rate float64
	// MessageSize is the workload's message size in bytes.
	MessageSize int
}

// parseOMBResult reads OMB's TestResult JSON, as OMB writes it with
// --output once its measurement has ended.
func parseOMBResult(data []byte) (ombResult, error) {
	var r struct {
		PublishRate []float64 `json:"publishRate"`
		MessageSize int       `json:"messageSize"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return ombResult{}, fmt.Errorf("read OMB's result: %w", err)
	}
	if len(r.PublishRate) == 0 {
		return ombResult{}, errors.New("OMB's result has no publishRate interval: the run measured nothing")
	}
	var sum float64
	for i, v := range r.PublishRate {
		if v < 0 || math.IsInf(v, 0) || v > 1e12 {
			return ombResult{}, fmt.Errorf("OMB's result: publishRate[%d] is %v, not a rate", i, v)
		}
		sum += v
	}
	return ombResult{Published: int64(math.Round(sum * ombIntervalSeconds)), Rate: sum / float64(len(r.PublishRate)), MessageSize: r.MessageSize}, nil
}

// ombWorkloadTime reads the warmup and measurement time of an OMB
// workload file, whole minutes as OMB takes them; its payload files are
// left to OMB, which reads them from its own directory.
func ombWorkloadTime(data []byte) (time.Duration, error) {
	var w struct {
		Warmup int `yaml:"warmupDurationMinutes"`
		Test   int `yaml:"testDurationMinutes"`
	}
	if err := yaml.Unmarshal(data, &w); err != nil {
		return 0, fmt.Errorf("read the OMB workload: %w", err)
	}
	const maxMinutes = 7 * 24 * 60 // a week
	if w.Warmup < 0 || w.Test <= 0 || w.Warmup > maxMinutes || w.Test > maxMinutes {
		return 0, fmt.Errorf("the OMB workload's warmupDurationMinutes %d and testDurationMinutes %d are no run's time", w.Warmup, w.Test)
	}
	return time.Duration(w.Warmup+w.Test) * time.Minute, nil
}
