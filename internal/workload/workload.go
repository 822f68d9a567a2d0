// Package workload reads benchmark workloads and broker driver settings from
// YAML: brokerbench's own format and OpenMessaging Benchmark's (OMB) workload
// and driver files, unchanged. Every problem is reported with file, line and
// field, wrapped around ErrInvalid.
package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/processing"
)

// Format names the file format a workload or driver config was read from.
type Format string

// Supported formats.
const (
	Native Format = "brokerbench"
	OMB    Format = "omb"
)

// Workload is a fully resolved, validated description of one benchmark run.
type Workload struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is the file the workload came from and Format its format.
	Source string `json:"source,omitempty"`
	Format Format `json:"format"`

	Topics             int `json:"topics"`
	PartitionsPerTopic int `json:"partitionsPerTopic"`
	// ReplicationFactor overrides the driver's when non-zero.
	ReplicationFactor int `json:"replicationFactor,omitempty"`

	MessageSize int `json:"messageSize"`
	// PayloadRandomRatio is the fraction of each payload that is random.
	PayloadRandomRatio float64 `json:"payloadRandomRatio"`
	PayloadPoolSize    int     `json:"payloadPoolSize"`
	// PayloadFile, when set, is the absolute path of the payload to send.
	PayloadFile    string          `json:"payloadFile,omitempty"`
	KeyDistributor payload.KeyMode `json:"keyDistributor"`
	// MessageSizes, when set, gives each message a size from a
	// distribution; MessageSize is then the mean size of the payload
	// pool, which byte rates are computed with.
	MessageSizes *payload.Sizes `json:"messageSizes,omitempty"`
	// Compressibility, when set, is the ratio the payloads compress to
	// with a codec, in place of PayloadRandomRatio.
	Compressibility *payload.Compressibility `json:"compressibility,omitempty"`
	// KeyCount is the number of distinct keys a keyed distributor
	// chooses among (0: payload.DefaultKeyCount); KeyZipfExponent the
	// ZIPF distributor's exponent.
	KeyCount        int     `json:"keyCount,omitempty"`
	KeyZipfExponent float64 `json:"keyZipfExponent,omitempty"`
	// meanSize is the MessageSize Validate set from MessageSizes (0:
	// none yet): a later MessageSize that differs was set by hand.
	meanSize int

	ProducersPerTopic        int `json:"producersPerTopic"`
	SubscriptionsPerTopic    int `json:"subscriptionsPerTopic"`
	ConsumersPerSubscription int `json:"consumersPerSubscription"`
	// ConsumerProcessingTime, when set, is the time every consumer spends
	// on each message it receives before it takes the next one (see
	// package processing).
	ConsumerProcessingTime *processing.Time `json:"consumerProcessingTime,omitempty"`

	// ProducerRate is the total target rate in messages per second over all
	// producers; 0 means as fast as possible, unless RateProfile is set.
	ProducerRate float64 `json:"producerRate"`
	// RateProfile, when set, is a total target rate that changes over
	// time (ProducerRate is then 0); see Pacing.
	RateProfile *RateProfile `json:"rateProfile,omitempty"`
	// MessageLimit stops the producers after this many messages in total
	// (0: no limit; the duration bounds the run).
	MessageLimit int64 `json:"messageLimit,omitempty"`

	Warmup   time.Duration `json:"warmupNs"`
	Duration time.Duration `json:"durationNs"`

	ConsumerBacklogSizeGB float64 `json:"consumerBacklogSizeGB,omitempty"`
	BacklogDrainRatio     float64 `json:"backlogDrainRatio,omitempty"`

	Seed uint64 `json:"seed"`

	// Faults is the fault schedule: actions on a local cluster's nodes at
	// offsets into the measurement phase.
	Faults []Fault `json:"faults,omitempty"`

	// Transactions, when set, makes the producers transactional and the
	// consumers read only committed messages (see Transactions).
	Transactions *Transactions `json:"transactions,omitempty"`

	// Notes say how the file was read where that is not obvious (an OMB
	// convention mapped to brokerbench's meaning, the payload file found).
	Notes []string `json:"notes,omitempty"`

	// Driver is an inline driver configuration (native format only), or nil.
	Driver *DriverConfig `json:"-"`
	// payloadTried lists where a relative payload file was looked for.
	payloadTried []string
}

// OMBMaxRate is the producerRate from which an OMB workload means "as fast
// as possible": OMB's own workload files write 10000000 for that, a rate
// its rate limiter never reaches, so OMB runs them unthrottled and measures
// publish latency from the actual send time.
const OMBMaxRate = 10_000_000

// MaxPayloadMemory bounds the memory of a workload's generated payloads.
const MaxPayloadMemory = 512 << 20

// Producers returns the total number of producers.
func (w *Workload) Producers() int { return w.Topics * w.ProducersPerTopic }

// Consumers returns the total number of consumers.
func (w *Workload) Consumers() int {
	return w.Topics * w.SubscriptionsPerTopic * w.ConsumersPerSubscription
}

// ombOnlyKeys are keys that only OMB workload files use; one of them marks a
// file as OMB format.
var ombOnlyKeys = []string{
	"producerRate", "testDurationMinutes", "warmupDurationMinutes", "consumerPerSubscription",
	"useRandomizedPayloads", "randomBytesRatio", "randomizedPayloadPoolSize",
	"consumerBacklogSizeGB", "payloadFile",
}

// Load reads and validates the workload file at path, in either format.
func Load(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: read workload: %w (check the path)", ErrInvalid, err)
	}
	return Parse(path, data)
}

// Parse reads a workload from data; name is used in error messages and to
// resolve relative payload file paths.
func Parse(name string, data []byte) (*Workload, error) {
	root, err := parseYAML(name, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name}
	var w *Workload
	if isOMB(root) {
		w = d.omb(root)
	} else {
		w = d.native(root)
	}
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	w.Source = name
	if w.PayloadFile != "" {
		given := w.PayloadFile
		w.PayloadFile, w.payloadTried = resolvePayload(given, name)
		if w.PayloadFile != given {
			w.Notes = append(w.Notes, fmt.Sprintf("payloadFile %q is %s", given, w.PayloadFile))
		}
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// yamlLine finds the line number in yaml.v3's syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserErrors are the messages of yaml.v3's parser (not its scanner).
// yaml.v3 reports their line counted from 0, its scanner's from 1
// (go-yaml/yaml issue 1, unfixed in v3.0.1); yamlError adds the 1.
var parserErrors = []string{
	"did not find expected <document start>", "did not find expected key", "did not find expected '-' indicator",
	"did not find expected node content", "did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found undefined tag handle", "found duplicate %YAML directive", "found incompatible YAML document",
}

// yamlError turns a YAML syntax error into a FieldError at its line,
// counted from 1.
func yamlError(name string, err error) error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return &FieldError{File: name, Msg: "not valid YAML: " + err.Error()}
	}
	line, _ := strconv.Atoi(m[1])
	for _, p := range parserErrors {
		if strings.Contains(m[2], p) {
			line++
			break
		}
	}
	return &FieldError{File: name, Line: line, Msg: "not valid YAML: " + m[2]}
}

func parseYAML(name string, data []byte) (*yaml.Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &FieldError{File: name, Msg: "file is empty: expected a YAML mapping"}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &FieldError{File: name, Msg: "expected a YAML mapping"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &FieldError{File: name, Line: root.Line, Msg: "expected a YAML mapping of field: value at the top level"}
	}
	return root, nil
}

func isOMB(root *yaml.Node) bool {
	for i := 0; i < len(root.Content); i += 2 {
		for _, k := range ombOnlyKeys {
			if root.Content[i].Value == k {
				return true
			}
		}
	}
	return false
}

func (d *decoder) native(root *yaml.Node) *Workload {
	w := &Workload{
		Format: Native, Topics: 1, PartitionsPerTopic: 1, MessageSize: 1024,
		PayloadRandomRatio: 1, PayloadPoolSize: 100, KeyDistributor: payload.NoKey,
		ProducersPerTopic: 1, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1,
		Duration: time.Minute, Seed: 1,
	}
	fields := nativeFields(w)
	fields["driver"] = func(d *decoder, key string, v *yaml.Node) {
		w.Driver = d.driverConfig(v, false)
	}
	fields["faults"] = faultsField(&w.Faults)
	fields["rateProfile"] = rateProfileField(&w.RateProfile)
	fields["messageSizes"] = messageSizesField(&w.MessageSizes)
	fields["compressibility"] = compressibilityField(&w.Compressibility)
	seen := d.mapping(root, "a brokerbench workload", fields)
	for _, pair := range [][2]string{{"messageSize", "messageSizes"}, {"payloadRandomRatio", "compressibility"}} {
		if seen[pair[0]] != nil && seen[pair[1]] != nil {
			d.fail(seen[pair[1]], pair[1], "give either %s (line %d) or %s, not both", pair[0], seen[pair[0]].Line, pair[1])
		}
	}
	if seen["rate"] != nil && seen["rateProfile"] != nil {
		d.fail(seen["rateProfile"], "rateProfile", "give either rate (a constant rate, line %d) or rateProfile, not both", seen["rate"].Line)
	}
	if w.Name == "" {
		d.fail(root, "name", "missing: every workload needs a name")
	}
	return w
}

// nativeFields returns the setters of brokerbench's workload fields, each
// writing into w. They are the one validator of each field: workload
// files, command-line overrides and study sweeps all go through them.
func nativeFields(w *Workload) map[string]fieldSetter {
	return map[string]fieldSetter{
		"name":                     stringField(&w.Name),
		"description":              stringField(&w.Description),
		"topics":                   intField(&w.Topics, 1, 10000),
		"partitionsPerTopic":       intField(&w.PartitionsPerTopic, 1, 100000),
		"replicationFactor":        intField(&w.ReplicationFactor, 1, 100),
		"messageSize":              intField(&w.MessageSize, payload.HeaderSize, 100<<20),
		"payloadRandomRatio":       floatField(&w.PayloadRandomRatio, 0, 1),
		"payloadPoolSize":          intField(&w.PayloadPoolSize, 1, 100000),
		"payloadFile":              stringField(&w.PayloadFile),
		"keyDistributor":           keyField(&w.KeyDistributor, true),
		"keyCount":                 intField(&w.KeyCount, 1, payload.MaxKeyCount),
		"keyZipfExponent":          floatField(&w.KeyZipfExponent, 1e-3, 10),
		"producersPerTopic":        intField(&w.ProducersPerTopic, 0, 10000),
		"subscriptionsPerTopic":    intField(&w.SubscriptionsPerTopic, 0, 1000),
		"consumersPerSubscription": intField(&w.ConsumersPerSubscription, 0, 10000),
		"consumerProcessingTime":   consumerProcessingField(&w.ConsumerProcessingTime),
		"rate":                     floatField(&w.ProducerRate, 0, 1e9),
		"messages":                 int64Field(&w.MessageLimit),
		"warmup":                   durationField(&w.Warmup, 0),
		"duration":                 durationField(&w.Duration, time.Second),
		"seed":                     seedField(&w.Seed),
		"consumerBacklogSizeGB":    floatField(&w.ConsumerBacklogSizeGB, 0, 1e6),
		"backlogDrainRatio":        floatField(&w.BacklogDrainRatio, 0, 1),
		"transactionSize": inTransactions(&w.Transactions, func(t *Transactions) fieldSetter {
			return intField(&t.Size, 1, MaxTransactionSize)
		}),
		"transactionAbortRate": inTransactions(&w.Transactions, func(t *Transactions) fieldSetter {
			return floatField(&t.AbortRate, 0, 1)
		}),
		"transactionCommitInterval": inTransactions(&w.Transactions, func(t *Transactions) fieldSetter {
			return durationField(&t.CommitInterval, time.Millisecond)
		}),
	}
}

// SetField sets the brokerbench workload field name (as spelled in a
// workload file) from its text value, with the checks a workload file
// gets. where and line name the value's source in errors: a flag such as
// "--rate", or a study file and line. Call Validate afterwards for the
// rules between fields.
func (w *Workload) SetField(where string, line int, name, value string) error {
	fields := nativeFields(w)
	set, ok := fields[name]
	switch {
	case !ok:
		return &FieldError{File: where, Line: line, Field: name, Msg: "not a workload field" + suggest(name, sortedKeys(fields))}
	case name == "name" || name == "description":
		return &FieldError{File: where, Line: line, Field: name, Msg: "cannot be set here"}
	}
	d := &decoder{file: where}
	set(d, name, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Line: line})
	return errors.Join(d.errs...)
}

// keyField decodes a key distributor: OMB's three, and in brokerbench's
// own format (native) ZIPF too.
func keyField(dst *payload.KeyMode, native bool) fieldSetter {
	allowed := []string{string(payload.NoKey), string(payload.RoundRobin), string(payload.RandomKey)}
	if native {
		allowed = append(allowed, string(payload.ZipfKey))
	}
	return func(d *decoder, key string, v *yaml.Node) {
		var s string
		enumField(&s, allowed...)(d, key, v)
		if s != "" {
			*dst = payload.KeyMode(s)
		}
	}
}

// seedField accepts 0..2^31-1; 0 keeps the default seed.
func seedField(dst *uint64) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		var n int
		intField(&n, 0, 1<<31-1)(d, key, v)
		if n != 0 {
			*dst = uint64(n)
		}
	}
}

func int64Field(dst *int64) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		var f float64
		floatField(&f, 0, 1e15)(d, key, v)
		if f != float64(int64(f)) {
			d.fail(v, key, "must be a whole number, got %v", f)
			return
		}
		*dst = int64(f)
	}
}

func (d *decoder) omb(root *yaml.Node) *Workload {
	w := &Workload{
		Format: OMB, Topics: 1, PartitionsPerTopic: 1, MessageSize: 1024,
		PayloadRandomRatio: 0.5, PayloadPoolSize: 1000, KeyDistributor: payload.NoKey,
		ProducersPerTopic: 1, SubscriptionsPerTopic: 1, ConsumersPerSubscription: 1,
		Duration: 15 * time.Minute, Warmup: time.Minute, Seed: 1,
	}
	randomized := false
	d.mapping(root, "an OMB workload", map[string]fieldSetter{
		"name":                      stringField(&w.Name),
		"topics":                    intField(&w.Topics, 1, 10000),
		"partitionsPerTopic":        intField(&w.PartitionsPerTopic, 1, 100000),
		"keyDistributor":            keyField(&w.KeyDistributor, false),
		"messageSize":               intField(&w.MessageSize, payload.HeaderSize, 100<<20),
		"useRandomizedPayloads":     boolField(&randomized),
		"randomBytesRatio":          floatField(&w.PayloadRandomRatio, 0, 1),
		"randomizedPayloadPoolSize": intField(&w.PayloadPoolSize, 1, 100000),
		"payloadFile":               stringField(&w.PayloadFile),
		"subscriptionsPerTopic":     intField(&w.SubscriptionsPerTopic, 0, 1000),
		"producersPerTopic":         intField(&w.ProducersPerTopic, 0, 10000),
		"consumerPerSubscription":   intField(&w.ConsumersPerSubscription, 0, 10000),
		"producerRate":              floatField(&w.ProducerRate, 0, 1e9),
		"consumerBacklogSizeGB":     floatField(&w.ConsumerBacklogSizeGB, 0, 1e6),
		"backlogDrainRatio":         floatField(&w.BacklogDrainRatio, 0, 1e6),
		"testDurationMinutes":       minutesField(&w.Duration),
		"warmupDurationMinutes":     minutesField(&w.Warmup),
	})
	if w.ProducerRate >= OMBMaxRate {
		w.Notes = append(w.Notes, fmt.Sprintf("producerRate %.0f is OMB's \"as fast as possible\": run unthrottled (max rate), publish latency from the actual send time", w.ProducerRate))
		w.ProducerRate = 0
	}
	if randomized {
		w.PayloadFile = ""
	} else if w.PayloadFile == "" {
		d.fail(root, "payloadFile", "missing: OMB workloads without useRandomizedPayloads: true need a payloadFile")
	}
	if w.Name == "" {
		d.fail(root, "name", "missing: every workload needs a name")
	}
	return w
}

// resolvePayload finds a relative payload file as OpenMessaging Benchmark
// does, against the working directory (OMB runs from its checkout root,
// where "payload/payload-1Kb.data" lives), and failing that against the
// workload file's folder. It returns the path found (absolute when it can)
// and the places tried; when neither exists it returns the
// working-directory path, which Validate reports with the places tried.
func resolvePayload(file, workloadPath string) (string, []string) {
	if filepath.IsAbs(file) {
		return file, nil
	}
	cwd, err := filepath.Abs(file)
	if err != nil {
		cwd = file
	}
	beside, err := filepath.Abs(filepath.Join(filepath.Dir(workloadPath), file))
	if err != nil {
		beside = filepath.Join(filepath.Dir(workloadPath), file)
	}
	tried := []string{cwd, beside}
	for _, p := range tried {
		if _, err := os.Stat(p); err == nil {
			return p, tried
		}
	}
	return cwd, tried
}

// Validate checks cross-field rules. Load and Parse call it; call it again
// after changing a Workload (for example after applying CLI overrides).
func (w *Workload) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{File: w.Source, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if w.Producers() == 0 && w.Consumers() == 0 {
		bad("producersPerTopic", "the workload has neither producers nor consumers")
	}
	if w.Duration <= 0 {
		bad("duration", "must be positive")
	}
	if w.Warmup < 0 {
		bad("warmup", "must not be negative")
	}
	w.validateTraffic(bad)
	w.validateTransactions(bad)
	if w.MessageSize < payload.HeaderSize {
		bad("messageSize", "must be at least %d bytes (the brokerbench header)", payload.HeaderSize)
	}
	if pool := int64(w.PayloadPoolSize) * int64(w.MessageSize); w.PayloadFile == "" && pool > MaxPayloadMemory {
		field := "payloadPoolSize"
		if w.Format == OMB {
			field = "randomizedPayloadPoolSize"
		}
		bad(field, "%d payloads of %d bytes take %.1f MiB, above the %d MiB of payloads brokerbench keeps in memory: use at most %d payloads of this size",
			w.PayloadPoolSize, w.MessageSize, float64(pool)/(1<<20), MaxPayloadMemory>>20, MaxPayloadMemory/int64(w.MessageSize))
	}
	errs = append(errs, w.validateFaults()...)
	if w.RateProfile != nil && w.ProducerRate > 0 {
		bad("rateProfile", "give either rate (here %v msg/s, perhaps from --rate) or rateProfile, not both", w.ProducerRate)
	}
	if w.RateProfile != nil && w.Producers() == 0 {
		bad("rateProfile", "the workload has no producers to follow it")
	}
	if w.ConsumerProcessingTime != nil && w.Consumers() == 0 {
		bad("consumerProcessingTime", "the workload has no consumers to spend it")
	}
	if w.ConsumerBacklogSizeGB > 0 && (w.Producers() == 0 || w.Consumers() == 0) {
		bad("consumerBacklogSizeGB", "a backlog test needs producers and consumers")
	}
	if w.PayloadFile != "" {
		if st, err := os.Stat(w.PayloadFile); err != nil {
			where := w.PayloadFile
			if len(w.payloadTried) > 0 {
				where = strings.Join(w.payloadTried, " or ")
			}
			bad("payloadFile", "cannot read %s: %v; a relative path is looked up in the working directory (as OMB does, run from its checkout root), then beside the workload file; or set useRandomizedPayloads: true", where, errors.Unwrap(err))
		} else if st.Size() != int64(w.MessageSize) {
			bad("payloadFile", "%s is %d bytes but messageSize is %d: make them equal", w.PayloadFile, st.Size(), w.MessageSize)
		}
	}
	return errors.Join(errs...)
}
