package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
)

// Imported is what Import found.
type Imported struct {
	Records []Record
	// Skipped says, per file, why it was not imported.
	Skipped []string
}

// Import reads the runs in paths: brokerbench results files, study
// directories (their runs/*.json), directories of either (searched
// recursively for .json files), and OpenMessaging Benchmark result JSON,
// brokerbench's own OMB output or OMB's. Labels go on every record. Files
// that are none of these (a study's study.json, other JSON) are skipped
// with the reason; a path that cannot be read is an error.
func Import(paths []string, labels map[string]string) (*Imported, error) {
	out := &Imported{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := out.file(p, labels); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || filepath.Ext(path) != ".json" || d.Name() == "study.json" {
				return nil
			}
			return out.file(path, labels)
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// file imports one file, or notes why not.
func (im *Imported) file(path string, labels map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		im.Skipped = append(im.Skipped, fmt.Sprintf("%s: not JSON: %v", path, err))
		return nil
	}
	var rec Record
	switch {
	case head.Schema == results.Schema:
		r, derr := results.Decode(path, data)
		if derr == nil {
			rec, derr = FromRun(r, path, labels)
		}
		err = derr
	case head.Schema != "":
		err = fmt.Errorf("schema %q is not a run's results", head.Schema)
	default:
		rec, err = FromOMB(data, path, fi.ModTime())
		rec.Labels = labels
	}
	if err != nil {
		im.Skipped = append(im.Skipped, fmt.Sprintf("%s: %v", path, err))
		return nil
	}
	im.Records = append(im.Records, rec)
	return nil
}

// ombResult holds the fields of OpenMessaging Benchmark's TestResult JSON
// a record takes. Latencies are milliseconds, publish delay microseconds.
// OMB's publish latency runs from the actual send, brokerbench's service
// time; its end-to-end latency from the intended send time, as
// brokerbench's.
type ombResult struct {
	Workload          *string   `json:"workload"`
	Driver            *string   `json:"driver"`
	MessageSize       int64     `json:"messageSize"`
	Topics            int       `json:"topics"`
	Partitions        int       `json:"partitions"`
	ProducersPerTopic int       `json:"producersPerTopic"`
	ConsumersPerTopic int       `json:"consumersPerTopic"`
	PublishRate       []float64 `json:"publishRate"`
	ConsumeRate       []float64 `json:"consumeRate"`
	PublishErrorRate  []float64 `json:"publishErrorRate"`

	PublishAvg  float64 `json:"aggregatedPublishLatencyAvg"`
	Publish50   float64 `json:"aggregatedPublishLatency50pct"`
	Publish95   float64 `json:"aggregatedPublishLatency95pct"`
	Publish99   float64 `json:"aggregatedPublishLatency99pct"`
	Publish999  float64 `json:"aggregatedPublishLatency999pct"`
	PublishMax  float64 `json:"aggregatedPublishLatencyMax"`
	DelayAvg    float64 `json:"aggregatedPublishDelayLatencyAvg"`
	Delay50     float64 `json:"aggregatedPublishDelayLatency50pct"`
	Delay95     float64 `json:"aggregatedPublishDelayLatency95pct"`
	Delay99     float64 `json:"aggregatedPublishDelayLatency99pct"`
	Delay999    float64 `json:"aggregatedPublishDelayLatency999pct"`
	DelayMax    float64 `json:"aggregatedPublishDelayLatencyMax"`
	EndToEndAvg float64 `json:"aggregatedEndToEndLatencyAvg"`
	EndToEnd50  float64 `json:"aggregatedEndToEndLatency50pct"`
	EndToEnd95  float64 `json:"aggregatedEndToEndLatency95pct"`
	EndToEnd99  float64 `json:"aggregatedEndToEndLatency99pct"`
	EndToEnd999 float64 `json:"aggregatedEndToEndLatency999pct"`
	EndToEndMax float64 `json:"aggregatedEndToEndLatencyMax"`
}

// FromOMB makes the record of an OpenMessaging Benchmark TestResult JSON
// file's content. OMB's file has no id and no time: the id is "omb-" and a
// hash of the content (the same file imported twice is one run), the time
// is modTime. Its environment is unknown but for the broker.
func FromOMB(data []byte, path string, modTime time.Time) (Record, error) {
	var o ombResult
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&o); err != nil {
		return Record{}, fmt.Errorf("not OMB results: %w", err)
	}
	if o.Workload == nil || o.Driver == nil || len(o.PublishRate) == 0 {
		return Record{}, errors.New("not OMB results: no workload, driver or publishRate")
	}
	if o.MessageSize < 0 || o.Topics < 0 || o.Partitions < 0 || o.ProducersPerTopic < 0 || o.ConsumersPerTopic < 0 {
		return Record{}, errors.New("OMB results with negative sizes")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Record{}, err
	}
	sum := sha256.Sum256(data)
	broker := strings.ToLower(strings.TrimSpace(*o.Driver))
	identity, _ := json.Marshal(map[string]any{
		"origin": "omb", "workload": *o.Workload, "driver": broker, "messageSize": o.MessageSize, "topics": o.Topics,
		"partitions": o.Partitions, "producersPerTopic": o.ProducersPerTopic, "consumersPerTopic": o.ConsumersPerTopic,
	})
	bench := sha256.Sum256(identity)
	f := map[string]float64{"publishRate": mean(o.PublishRate), "consumeRate": mean(o.ConsumeRate)}
	if len(o.PublishErrorRate) > 0 {
		f["publishErrorRate"] = mean(o.PublishErrorRate)
	}
	if o.MessageSize > 0 {
		f["publishMBps"] = f["publishRate"] * float64(o.MessageSize) / 1e6
		f["consumeMBps"] = f["consumeRate"] * float64(o.MessageSize) / 1e6
	}
	for prefix, qs := range map[string][6]float64{
		"service": {o.PublishAvg, o.Publish50, o.Publish95, o.Publish99, o.Publish999, o.PublishMax},
		"sendLag": {o.DelayAvg / 1000, o.Delay50 / 1000, o.Delay95 / 1000, o.Delay99 / 1000, o.Delay999 / 1000, o.DelayMax / 1000},
		"e2e":     {o.EndToEndAvg, o.EndToEnd50, o.EndToEnd95, o.EndToEnd99, o.EndToEnd999, o.EndToEndMax},
	} {
		for i, q := range []string{"mean", "p50", "p95", "p99", "p99.9", "max"} {
			f[prefix+"."+q] = qs[i]
		}
	}
	for k, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Record{}, fmt.Errorf("OMB results with %s = %v", k, v)
		}
	}
	return Record{
		ID: "omb-" + hex.EncodeToString(sum[:])[:16], Time: modTime.UTC(), Origin: "omb",
		Workload: *o.Workload, Broker: broker, Benchmark: hex.EncodeToString(bench[:])[:12],
		Figures: f, Verdict: "unknown", File: abs,
	}, nil
}

// mean is the mean of vs, 0 for none.
func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	var s float64
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}
