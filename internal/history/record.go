package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Version is the record format this build writes. It is the first: a
// later version upgrades older records as decodeRecord reads them, and
// testdata/v1.jsonl holds version 1 records that every later build must
// still read (TestReadsVersion1).
const Version = 1

// Record is one run as the history remembers it. Version and ID are its
// first two fields, so that they open every line of the store: Add reads
// the ids there (prefixID).
type Record struct {
	// Version is the format version ("v"); Add sets it.
	Version int    `json:"v"`
	ID      string `json:"id"`
	// Time is when the run started.
	Time time.Time `json:"time"`
	// Origin is what wrote the results: "brokerbench" or "omb" (imported
	// OpenMessaging Benchmark results).
	Origin string            `json:"origin"`
	Labels map[string]string `json:"labels,omitempty"`
	// Workload is the workload's name; Broker the driver's ("kafka").
	Workload string `json:"workload"`
	Broker   string `json:"broker"`
	// Benchmark identifies what was asked of the broker: a hash of the
	// workload's settings (its description, notes and source left out)
	// with the driver's name, message format and replication factor, and
	// for a run of a study the study's name, setup and swept parameters
	// (but the broker release: Env.BrokerVersion).
	// Runs with the same Benchmark and Nodes form a series.
	Benchmark string `json:"benchmark"`
	// Settings are the driver's effective settings, "section/key" to value
	// (secrets redacted): the tuning that may change along a series.
	Settings map[string]string `json:"settings,omitempty"`
	// Study is "name/key" for a run of a study.
	Study string `json:"study,omitempty"`
	Env   Env    `json:"env"`
	// Figures are the run's summary figures by metric name (see Metrics).
	Figures map[string]float64 `json:"figures"`
	// Verdict is results.Judge's ("ok", "target not held", ...).
	Verdict string `json:"verdict"`
	// File is the absolute path of the full results file.
	File string `json:"file"`
}

// Env is what a run ran on.
type Env struct {
	BrokerVersion string `json:"brokerVersion,omitempty"`
	// Nodes is the number of broker nodes: the study setup's, else the
	// number of broker addresses, else 1.
	Nodes              int    `json:"nodes"`
	BrokerbenchVersion string `json:"brokerbenchVersion,omitempty"`
	BrokerbenchCommit  string `json:"brokerbenchCommit,omitempty"`
	GoVersion          string `json:"goVersion,omitempty"`
	Hostname           string `json:"hostname,omitempty"`
	CPUModel           string `json:"cpuModel,omitempty"`
	CPUCores           int    `json:"cpuCores,omitempty"`
	MemoryBytes        int64  `json:"memoryBytes,omitempty"`
	OS                 string `json:"os,omitempty"`
	Kernel             string `json:"kernel,omitempty"`
	Arch               string `json:"arch,omitempty"`
}

// Series names the series a record belongs to: the same benchmark on the
// same number of nodes.
func (r *Record) Series() string { return fmt.Sprintf("%s/%d", r.Benchmark, r.Env.Nodes) }

// errNewer marks a record of a version this build does not read.
var errNewer = errors.New("record of a newer version")

// decodeRecord decodes one line, upgrading older versions.
// A line is decoded once as the current version; only one that is not
// is decoded again to tell a newer version from a damaged line.
func decodeRecord(line []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil || r.Version > Version {
		var head struct {
			V int `json:"v"`
		}
		if json.Unmarshal(line, &head) == nil && head.V > Version {
			return nil, fmt.Errorf("%w: %d", errNewer, head.V)
		}
		if err == nil {
			err = fmt.Errorf("record version %d", r.Version)
		}
		return nil, err
	}
	if r.Version < 1 {
		return nil, fmt.Errorf("record version %d", r.Version)
	}
	if r.ID == "" {
		return nil, errors.New("record without an id")
	}
	return &r, nil
}

// Labels parses "key=value" labels; a key given twice keeps its last
// value.
func Labels(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		m[strings.TrimSpace(k)] = v
	}
	return m, nil
}

// FromRun makes the record of a brokerbench run whose results are at
// path, with labels.
func FromRun(r *results.Run, path string, labels map[string]string) (Record, error) {
	if r.Workload == nil {
		return Record{}, errors.New("results without a workload")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Record{}, err
	}
	e := r.Environment
	rec := Record{
		ID: r.ID, Time: r.StartedAt.UTC(), Origin: "brokerbench", Labels: labels,
		Workload: r.Workload.Name, Broker: r.Driver.Name,
		Benchmark: benchmarkHash(r),
		Settings:  settings(r.Driver),
		Env: Env{
			BrokerVersion: e.BrokerVersion, Nodes: nodes(r),
			BrokerbenchVersion: e.BrokerbenchVersion, BrokerbenchCommit: e.BrokerbenchCommit, GoVersion: e.GoVersion,
			Hostname: e.Hostname, CPUModel: e.CPUModel, CPUCores: e.CPUCores, MemoryBytes: e.MemoryBytes,
			OS: e.OS, Kernel: e.Kernel, Arch: e.Arch,
		},
		Figures: Figures(r),
		Verdict: results.Judge(r).Kind.String(),
		File:    abs,
	}
	if s := r.Study; s != nil {
		rec.Study = s.Name + "/" + s.Key
	}
	if rec.ID == "" {
		return Record{}, errors.New("results without a run id")
	}
	return rec, nil
}

// nodes is the run's broker node count: the study setup's, else the
// number of broker addresses, else 1.
func nodes(r *results.Run) int {
	if r.Study != nil && r.Study.Brokers > 0 {
		return r.Study.Brokers
	}
	if ep := r.Environment.BrokerEndpoint; ep != "" {
		return strings.Count(ep, ",") + 1
	}
	return 1
}

// benchmarkHash hashes what the run asked of the broker: its workload's
// settings, without the fields that only describe it, the driver's name,
// format and replication factor, and for a run of a study the study, its
// setup and the swept parameters' values but the broker release's.
func benchmarkHash(r *results.Run) string {
	var w map[string]any
	data, _ := json.Marshal(r.Workload)
	_ = json.Unmarshal(data, &w)
	for _, k := range []string{"description", "source", "notes"} {
		delete(w, k)
	}
	id := map[string]any{"workload": w, "driver": r.Driver.Name, "format": r.Driver.Format, "replicationFactor": r.Driver.ReplicationFactor}
	if s := r.Study; s != nil {
		// A study's swept parameters may be driver settings: each point of
		// the sweep is a benchmark of its own. Iterations repeat one. The
		// broker release is not: a series runs across releases.
		params := slices.DeleteFunc(slices.Clone(s.Params), func(p results.Param) bool { return p.Name == workload.BrokerVersionParam })
		id["study"] = map[string]any{"name": s.Name, "setup": s.Setup, "params": params}
	}
	data, _ = json.Marshal(id) // map keys are sorted: the same settings give the same bytes
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// sensitive matches setting keys whose values are secrets even when no
// secret reference was expanded in this process (an imported file).
var sensitive = regexp.MustCompile(`(?i)pass(word)?|secret|token|jaas|credential|private`)

// settings flattens the driver's effective settings to "section/key",
// with secret values masked.
func settings(d results.Driver) map[string]string {
	if len(d.Effective) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, section := range slices.Sorted(maps.Keys(d.Effective)) {
		for _, p := range d.Effective[section].Effective() {
			v := secret.Redact(p.Value)
			if sensitive.MatchString(p.Key) {
				v = secret.Mask
			}
			m[section+"/"+p.Key] = v
		}
	}
	return m
}

// Figures are the run's summary figures by metric name.
func Figures(r *results.Run) map[string]float64 {
	m := r.Measured
	f := map[string]float64{
		"publishRate": m.PublishRate, "consumeRate": m.ConsumeRate,
		"publishMBps": m.PublishMBps, "consumeMBps": m.ConsumeMBps,
	}
	latencies(f, "publish", m.PublishLatency)
	latencies(f, "service", m.ServiceTime)
	latencies(f, "e2e", m.EndToEndLatency)
	latencies(f, "sendLag", m.SendLag)
	if m.CommitLatency != nil {
		latencies(f, "commit", *m.CommitLatency)
	}
	c := r.Counts
	for k, v := range map[string]int64{
		"sent": c.Sent, "acked": c.Acked, "failed": c.Failed, "consumed": c.Consumed, "unacked": c.Unacked,
		"lost": c.Lost, "unconfirmedLoss": c.UnconfirmedLoss, "duplicated": c.Duplicated, "outOfOrder": c.OutOfOrder,
	} {
		f[k] = float64(v)
	}
	if s := m.System; s != nil {
		f["clientCpu"], f["otherCpu"] = s.ClientCPU, s.OtherCPU
		if s.BrokerSampled {
			f["brokerCpu"] = s.BrokerCPU
		}
	}
	if t := c.Transactions; t != nil {
		f["abortRate"], f["abortedRead"] = t.AbortRate(), float64(c.AbortedRead)
	}
	if t := r.MaxRate; t != nil {
		f["maxRate"] = t.Rate
	}
	return f
}

// latencies adds a latency summary's figures, in ms, as prefix.p50 ...
func latencies(f map[string]float64, prefix string, l metrics.Latency) {
	if l.Count == 0 {
		return
	}
	for _, q := range []struct {
		name string
		v    float64
	}{{"mean", l.Mean}, {"p50", l.P50}, {"p95", l.P95}, {"p99", l.P99}, {"p99.9", l.P999}, {"max", l.Max}} {
		f[prefix+"."+q.name] = q.v
	}
}

// Recording is where runs are recorded, and the labels their records get.
type Recording struct {
	// Path is the store; "" records nothing.
	Path   string
	Labels map[string]string
}

// Stored is a run and the path its results were written to.
type Stored struct {
	Run  *results.Run
	Path string
}

// Add records the runs not recorded yet, in one append, and returns how
// many it added.
func (rc Recording) Add(runs ...Stored) (int, error) {
	if rc.Path == "" || len(runs) == 0 {
		return 0, nil
	}
	recs := make([]Record, 0, len(runs))
	for _, s := range runs {
		rec, err := FromRun(s.Run, s.Path, rc.Labels)
		if err != nil {
			return 0, fmt.Errorf("history: %s: %w", s.Path, err)
		}
		recs = append(recs, rec)
	}
	return Open(rc.Path).Add(recs...)
}
