package workload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/payload"
)

func TestParseOMBWorkload(t *testing.T) {
	w, err := Load("testdata/omb-1-topic-6-partitions-100b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if w.Format != OMB || w.Name != "1 topic / 6 partitions / 100b" || w.PartitionsPerTopic != 6 || w.MessageSize != 100 ||
		w.ProducerRate != 5000 || w.Duration != 15*time.Minute || w.Warmup != time.Minute || w.PayloadRandomRatio != 0.5 ||
		w.PayloadPoolSize != 1000 || w.KeyDistributor != payload.NoKey || w.PayloadFile != "" || w.Consumers() != 1 || w.Producers() != 1 {
		t.Fatalf("unexpected workload: %+v", w)
	}
}

func TestParseNativeWorkload(t *testing.T) {
	src := `name: n
topics: 2
partitionsPerTopic: 3
messageSize: 512
keyDistributor: KEY_ROUND_ROBIN
producersPerTopic: 2
subscriptionsPerTopic: 2
consumersPerSubscription: 3
rate: 1_000
messages: 5000
warmup: 2s
duration: 1m30s
driver:
  driver: kafka
  replicationFactor: 3
  producerConfig:
    acks: "1"
  consumerConfig: |
    fetch.min.bytes=10
`
	w, err := Parse("n.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if w.Format != Native || w.Producers() != 4 || w.Consumers() != 12 || w.ProducerRate != 1000 || w.MessageLimit != 5000 ||
		w.Duration != 90*time.Second || w.Warmup != 2*time.Second || w.KeyDistributor != payload.RoundRobin {
		t.Fatalf("unexpected workload: %+v", w)
	}
	d := w.Driver
	if d == nil || d.Name != "kafka" || d.ReplicationFactor != 3 {
		t.Fatalf("unexpected driver: %+v", d)
	}
	if v, _ := d.Producer.Get("acks"); v != "1" {
		t.Errorf("acks = %q", v)
	}
	if p := d.Consumer.Map()["fetch.min.bytes"]; p.Value != "10" || p.Line != 19 {
		t.Errorf("fetch.min.bytes = %+v, want value 10 on line 19", p)
	}
}

func TestParseOMBDriver(t *testing.T) {
	d, err := LoadDriver("testdata/omb-kafka-driver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "kafka" || d.Format != OMB || !d.Reset || d.ReplicationFactor != 1 {
		t.Fatalf("unexpected driver: %+v", d)
	}
	// Lines count from the file's first line: commonConfig's block starts on
	// line 12, so its second property is on line 13.
	if p := d.Common.Map()["request.timeout.ms"]; p.Value != "120000" || p.Line != 13 {
		t.Errorf("request.timeout.ms = %+v, want 120000 on line 13", p)
	}
	if len(d.Producer) != 3 || len(d.Consumer) != 3 || len(d.Topic) != 1 {
		t.Errorf("property counts: producer %d consumer %d topic %d", len(d.Producer), len(d.Consumer), len(d.Topic))
	}
}

// TestParseOMBPulsarDriver: OMB's Pulsar driver files nest their
// settings in client, producer and consumer sections, read as
// commonConfig, producerConfig and consumerConfig with nested keys joined
// by dots; settings without a value are left unset.
func TestParseOMBPulsarDriver(t *testing.T) {
	d, err := LoadDriver("testdata/omb-pulsar-driver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "pulsar" || d.Format != OMB || d.ReplicationFactor != 1 {
		t.Fatalf("unexpected driver: %+v", d)
	}
	if p := d.Common.Map()["persistence.ensembleSize"]; p.Value != "3" || p.Line != 28 {
		t.Errorf("persistence.ensembleSize = %+v, want 3 on line 28", p)
	}
	for _, unset := range []string{"tlsTrustCertsFilePath", "authentication.plugin", "authentication.data", "persistence"} {
		if v, ok := d.Common.Get(unset); ok {
			t.Errorf("%s set to %q; OMB's file gives it no value", unset, v)
		}
	}
	if len(d.Common) != 13 || len(d.Producer) != 5 || len(d.Consumer) != 2 || len(d.Topic) != 0 {
		t.Errorf("property counts: common %d producer %d consumer %d topic %d", len(d.Common), len(d.Producer), len(d.Consumer), len(d.Topic))
	}
	if v, _ := d.Consumer.Get("subscriptionType"); v != "Failover" {
		t.Errorf("subscriptionType = %q", v)
	}
	once, err := LoadDriver("testdata/omb-pulsar-effectively-once-driver.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := once.Common.Get("persistence.deduplicationEnabled"); v != "true" || len(once.Producer) != 3 || len(once.Consumer) != 1 {
		t.Errorf("deduplication %q, producer %v, consumer %v", v, once.Producer, once.Consumer)
	}
	// A section that is not a mapping, and a list inside one, are refused
	// with their line.
	for src, want := range map[string]string{
		"driverClass: io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver\nclient: pulsar://h:6650\n":       "p.yaml:2",
		"driverClass: io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver\nproducer:\n  batching: [1, 2]\n": "p.yaml:3",
	} {
		if _, err := ParseDriver("p.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: error %v, want one at %s", src, err, want)
		}
	}
}

// TestParseErrors checks that every kind of bad input is reported with the
// file, the line and the field, and wraps ErrInvalid.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string // substrings of the error
	}{
		// An unknown field is named with a suggestion and the allowed list.
		{"unknown field", "name: x\npartitionsPerTopc: 3\n", []string{"w.yaml:2", `"partitionsPerTopc"`, `did you mean "partitionsPerTopic"`}},
		// A wrong type names the value.
		{"not an integer", "name: x\ntopics: many\n", []string{"w.yaml:2", `"topics"`, `integer, got "many"`}},
		// Ranges are enforced.
		{"out of range", "name: x\ntopics: 0\n", []string{"w.yaml:2", "between 1 and"}},
		// Messages must hold the header.
		{"message too small", "name: x\nmessageSize: 10\n", []string{"w.yaml:2", "messageSize", "between 22"}},
		// Enumerations list what is allowed.
		{"bad key distributor", "name: x\nkeyDistributor: ROUND\n", []string{"w.yaml:2", "NO_KEY, KEY_ROUND_ROBIN, RANDOM_NANO"}},
		// Durations must parse.
		{"bad duration", "name: x\nduration: soon\n", []string{"w.yaml:2", `"duration"`, `got "soon"`}},
		// Durations have a floor.
		{"duration too short", "name: x\nduration: 10ms\n", []string{"w.yaml:2", "at least 1s"}},
		// A name is required.
		{"missing name", "topics: 1\n", []string{"w.yaml:1", "name", "missing"}},
		// Duplicate keys are caught with both lines.
		{"duplicate", "name: x\ntopics: 1\ntopics: 2\n", []string{"w.yaml:3", "duplicate", "line 2"}},
		// Not YAML at all.
		{"invalid yaml", "name: [x\n", []string{"w.yaml", "not valid YAML"}},
		// Syntax errors name the line they are on, from the parser and
		// from the scanner alike.
		{"unclosed sequence", "name: x\ntopics: 1\nmessageSize: [100\nrate: 5\n", []string{"w.yaml:3:", "expected ',' or ']'"}},
		{"stray item", "name: x\n- a\n", []string{"w.yaml:2:", "expected key"}},
		{"bad indentation", "name: x\ntopics: 1\n  messageSize: 100\n", []string{"w.yaml:3:", "mapping values"}},
		// Empty file.
		{"empty", "  \n", []string{"w.yaml", "empty"}},
		// Top level must be a mapping.
		{"list", "- a\n- b\n", []string{"w.yaml:1", "mapping"}},
		// OMB without a payload source.
		{"omb no payload", "name: x\nproducerRate: 10\n", []string{"payloadFile", "useRandomizedPayloads"}},
		// OMB payload file that does not exist.
		{"omb missing payload file", "name: x\nproducerRate: 10\npayloadFile: nope.data\n", []string{"payloadFile", "nope.data"}},
		// OMB minutes must be numbers.
		{"omb minutes", "name: x\nuseRandomizedPayloads: true\ntestDurationMinutes: ten\n", []string{"w.yaml:3", "testDurationMinutes"}},
		// No producers and no consumers.
		{"nothing to do", "name: x\nproducersPerTopic: 0\nsubscriptionsPerTopic: 0\n", []string{"neither producers nor consumers"}},
		{"backlog without consumers", "name: x\nuseRandomizedPayloads: true\nconsumerBacklogSizeGB: 1\nsubscriptionsPerTopic: 0\n", []string{"consumerBacklogSizeGB", "needs producers and consumers"}},
		// Inline driver without a name.
		{"driver without name", "name: x\ndriver:\n  replicationFactor: 1\n", []string{"w.yaml:3", "driver", "missing"}},
		// Inline driver with a bad properties section.
		{"driver bad props", "name: x\ndriver:\n  driver: kafka\n  producerConfig: [1]\n", []string{"w.yaml:4", "producerConfig"}},
		// A ratio outside [0, 1].
		{"ratio", "name: x\npayloadRandomRatio: 2\n", []string{"w.yaml:2", "between 0 and 1"}},
		// A non-integer message count.
		{"fractional messages", "name: x\nmessages: 1.5\n", []string{"w.yaml:2", "whole number"}},
		// Several errors are all reported.
		{"several", "name: x\ntopics: a\npartitionsPerTopic: b\n", []string{"w.yaml:2", "w.yaml:3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("w.yaml", []byte(tc.src))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDriverErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		// Unknown OMB driver classes are named.
		{"unknown class", "name: X\ndriverClass: com.example.Nope\n", []string{"d.yaml:2", "com.example.Nope", "known:"}},
		// A properties line without a separator.
		{"bad property", "driver: kafka\nproducerConfig: |\n  justakey\n", []string{"d.yaml:2", "not a key=value"}},
		// Unknown top-level fields.
		{"unknown field", "driver: kafka\nproducerConfg: {}\n", []string{"d.yaml:2", `did you mean "producerConfig"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDriver("d.yaml", []byte(tc.src))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseProperties(t *testing.T) {
	props, err := ParseProperties("# comment\n! also comment\na=1\nb : 2\nc 3\nd=long \\\n  value\n\ne=\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "2", "c": "3", "d": "long value", "e": ""}
	got := props.Map()
	for k, v := range want {
		if got[k].Value != v {
			t.Errorf("%s = %q, want %q", k, got[k].Value, v)
		}
	}
	if got["a"].Line != 3 || got["e"].Line != 9 {
		t.Errorf("lines: a=%d e=%d", got["a"].Line, got["e"].Line)
	}
}

func TestPayloadFileRelativeToWorkload(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.data"), make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "name: x\nmessageSize: 64\npayloadFile: p.data\nproducerRate: 1\n"
	w, err := Parse(filepath.Join(dir, "w.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if w.PayloadFile != filepath.Join(dir, "p.data") {
		t.Errorf("payload file %q", w.PayloadFile)
	}
	_, err = Parse(filepath.Join(dir, "w.yaml"), []byte(strings.Replace(src, "64\n", "65\n", 1)))
	if err == nil || !strings.Contains(err.Error(), "64 bytes but messageSize is 65") {
		t.Errorf("size mismatch not reported: %v", err)
	}
}

func TestRedacted(t *testing.T) {
	d := &DriverConfig{Common: Properties{{Key: "sasl.jaas.config", Value: "secret"}, {Key: "acks", Value: "1"}}}
	r := d.Redacted()
	if v, _ := r.Common.Get("sasl.jaas.config"); v != "[redacted]" {
		t.Errorf("not redacted: %q", v)
	}
	if v, _ := r.Common.Get("acks"); v != "1" {
		t.Errorf("acks changed: %q", v)
	}
	if v, _ := d.Common.Get("sasl.jaas.config"); v != "secret" {
		t.Error("original modified")
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/omb-1-topic-6-partitions-100b.yaml", "testdata/omb-kafka-driver.yaml", "testdata/omb-pulsar-driver.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\ndriver:\n  driver: kafka\n  producerConfig: |\n    acks=1\n"))
	f.Add([]byte("name: x\nconsumerProcessingTime:\n  logNormal: {median: 2ms, sigma: 0.5, max: 50ms}\n  seed: 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Parse("f.yaml", data)
		if err == nil && (w.Name == "" || w.MessageSize < payload.HeaderSize || w.Duration <= 0) {
			t.Fatalf("accepted invalid workload: %+v", w)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error does not wrap ErrInvalid: %v", err)
		}
		_, _ = ParseDriver("f.yaml", data)
	})
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=1\nb: 2\n# c\nd \\\n e\n")
	f.Fuzz(func(t *testing.T, text string) {
		props, err := ParseProperties(text)
		if err != nil {
			return
		}
		for _, p := range props {
			if p.Key == "" || strings.ContainsAny(p.Key, "=: \t") {
				t.Fatalf("bad key %q from %q", p.Key, text)
			}
		}
	})
}

func FuzzParseStudy(f *testing.F) {
	// Small seeds: the engine minimises every input that finds new
	// coverage, which takes long on multi-kilobyte files.
	f.Add([]byte("name: s\niterations: 2\nworkloads:\n  - {name: a, messageSize: 128}\n  - w.yaml\nsetups:\n  - {name: x, brokers: 3, only: [a], sweep: {messageSize: [1024, 2048]}}\nprice: {perNodeHour: 0.5}\ncolumns: [setup]\n"))
	f.Add([]byte("name: s\nworkload: {name: a}\nsweep: {producer.acks: [\"1\", all]}\nquick: {set: {messageSize: [100]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseStudy("s.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		if s.Name == "" || len(s.Workloads) == 0 || len(s.Setups) == 0 || s.Iterations < 1 {
			t.Fatalf("accepted an incomplete study: %+v", s)
		}
		for _, p := range append(s.Sweep, s.Quick.Set...) {
			if len(p.Values) == 0 {
				t.Fatalf("sweep %s has no values", p.Name)
			}
		}
	})
}

// TestPayloadFileAsOMBResolvesIt runs from an OMB-like checkout root: the
// payload path is relative to the working directory, as OMB reads it, and
// wins over a same-named file beside the workload.
func TestPayloadFileAsOMBResolvesIt(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"workloads", "payload", "workloads/payload"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(root, "payload", "p.data"), make([]byte, 64), 0o644)
	_ = os.WriteFile(filepath.Join(root, "workloads", "payload", "p.data"), make([]byte, 65), 0o644)
	t.Chdir(root)
	src := []byte("name: x\nmessageSize: 64\npayloadFile: \"payload/p.data\"\nproducerRate: 1\n")
	w, err := Parse("workloads/w.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "payload", "p.data"); w.PayloadFile != want {
		t.Errorf("payload %q, want the working directory's %q", w.PayloadFile, want)
	}
	if len(w.Notes) == 0 || !strings.Contains(w.Notes[0], w.PayloadFile) {
		t.Errorf("notes %q do not say which file was used", w.Notes)
	}
	// Neither place has it: the error names both.
	_, err = Parse("workloads/w.yaml", []byte("name: x\nmessageSize: 64\npayloadFile: none.data\nproducerRate: 1\n"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "none.data")) || !strings.Contains(err.Error(), filepath.Join(root, "workloads", "none.data")) {
		t.Errorf("missing payload error does not name both places: %v", err)
	}
}

// TestOMBMaxRateConvention: OMB's producerRate 10000000 means as fast as
// possible; brokerbench runs it unthrottled and says so.
func TestOMBMaxRateConvention(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want float64
	}{{"10000000", 0}, {"50000000", 0}, {"9999999", 9999999}, {"50000", 50000}} {
		w, err := Parse("w.yaml", []byte("name: x\nuseRandomizedPayloads: true\nproducerRate: "+tc.rate+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if w.ProducerRate != tc.want || (tc.want == 0) != (len(w.Notes) == 1) {
			t.Errorf("producerRate %s: rate %v notes %q, want %v", tc.rate, w.ProducerRate, w.Notes, tc.want)
		}
	}
}

// TestSetField: command-line overrides and sweeps go through the
// validators of the workload file's fields, with the same messages.
func TestSetField(t *testing.T) {
	cases := []struct {
		field, value string
		want         string // error text; "" for success
	}{
		{"rate", "-5", "must be between 0 and"},
		{"rate", "2500", ""},
		{"messages", "-1", "must be between 0 and"},
		{"messages", "1.5", "whole number"},
		{"duration", "1ns", "must be at least 1s"},
		{"duration", "30s", ""},
		{"warmup", "-1s", "must be at least 0s"},
		{"messageSize", "3", "must be between"},
		{"topcs", "1", `did you mean "topics"`},
		{"name", "x", "cannot be set here"},
	}
	for _, tc := range cases {
		w := &Workload{}
		err := w.SetField("--"+tc.field, 0, tc.field, tc.value)
		if (tc.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--"+tc.field) || !errors.Is(err, ErrInvalid))) {
			t.Errorf("%s=%s: %v, want %q", tc.field, tc.value, err, tc.want)
		}
	}
	// The file gives the same message for the same value.
	_, err := Parse("w.yaml", []byte("name: x\nrate: -5\n"))
	if err == nil || !strings.Contains(err.Error(), "must be between 0 and") {
		t.Errorf("file: %v", err)
	}
}

// TestPayloadMemoryBounded: a pool of payloads too large for memory is an
// input error at load time, named by the format's own field.
func TestPayloadMemoryBounded(t *testing.T) {
	_, err := Parse("w.yaml", []byte("name: x\nmessageSize: 10000000\nuseRandomizedPayloads: true\nrandomizedPayloadPoolSize: 1000\nproducerRate: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "randomizedPayloadPoolSize") || !strings.Contains(err.Error(), "use at most 53 payloads") {
		t.Errorf("got %v", err)
	}
	if _, err := Parse("w.yaml", []byte("name: x\nmessageSize: 1000000\npayloadPoolSize: 100\n")); err != nil {
		t.Errorf("100 MB of payloads rejected: %v", err)
	}
}
