package workload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Study is a set of runs: every workload, under every broker setup, at
// every combination of the sweep's values, repeated Iterations times.
type Study struct {
	Name        string
	Description string
	Source      string
	Workloads   []*Workload
	Setups      []Setup
	// Sweep parameters vary in the order given; the last varies fastest.
	Sweep      []SweepParam
	Iterations int
	// Quick holds the overrides of --scale quick.
	Quick Scale
	// Price, if set, gives the cost figures of the report.
	Price *Price
	// Columns are the report table's columns (see the report package);
	// empty means its default.
	Columns []string
	// ColumnsLine is the line of the columns field, for errors.
	ColumnsLine int `json:"-"`
	// Published, if set, holds the reference document's figures.
	Published *Published
}

// Setup is one broker setup a study compares.
type Setup struct {
	Name string
	// Brokers is the number of broker nodes (default 1).
	Brokers int
	// ReplicationFactor overrides the workload's and driver's when not 0.
	ReplicationFactor int
	// Driver, if set, replaces the workload's driver settings.
	Driver *DriverConfig
	// Needs names a capability the setup requires beyond a local
	// single-node broker (e.g. "cluster", "faults"); such setups are
	// skipped with a message until it exists.
	Needs string
	// Only, if set, limits the setup to the workloads with these names.
	Only []string
	// Sweep adds parameters swept under this setup only, after the
	// study's.
	Sweep []SweepParam
	// Network, if set, shapes the local cluster's links for the setup.
	Network *Network
	// Workers, if not 0, spreads each of the setup's runs over this many
	// worker processes brokerbench starts on this machine, each on its
	// own loopback address (docs/distributed.md).
	Workers int
	// BrokerVersion, if set, is the broker release of the local cluster
	// the setup's runs go to (a sweep of BrokerVersionParam sets it per
	// run); empty: the release brokerbench pins.
	BrokerVersion string
}

// BrokerVersionParam is the swept parameter that sets the broker release
// of a run's local cluster (Setup.BrokerVersion). Its values are compared
// as setups are: a smoke run keeps them all, and the history keeps the
// runs of every release in one series, the release a change along it.
const BrokerVersionParam = "brokerVersion"

// SweepParam is one swept parameter: a workload field (messageSize,
// partitionsPerTopic, topics, producersPerTopic, subscriptionsPerTopic,
// consumersPerSubscription, rate, messages, replicationFactor,
// consumerBacklogSizeGB, transactionSize, transactionAbortRate,
// transactionCommitInterval), a driver setting ("producer.acks",
// "consumer.fetch.min.bytes", "topic.x", "common.x"), or the broker
// release (BrokerVersionParam).
type SweepParam struct {
	Name   string
	Values []string
	File   string
	Line   int
}

// Scale shrinks a study: zero fields leave the workload's values.
type Scale struct {
	Warmup   time.Duration
	Duration time.Duration
	// Messages caps the message count of runs that have one (a backlog
	// test's target shrinks with it).
	Messages int64
	// Iterations replaces the study's iterations.
	Iterations int
	// Set holds parameters fixed at this scale (one value each), applied
	// after the sweep: e.g. fewer partitions than a published cluster had.
	Set []SweepParam
}

// Price gives the cost of the system under test.
type Price struct {
	// PerNodeHour is the cost of one broker node for an hour.
	PerNodeHour float64
	// Nodes overrides the setup's broker count for cost (0: Brokers).
	Nodes    int
	Currency string
}

// sweepFields are the workload fields a sweep may vary.
var sweepFields = []string{"messageSize", "partitionsPerTopic", "topics", "producersPerTopic", "subscriptionsPerTopic",
	"consumersPerSubscription", "rate", "messages", "replicationFactor", "consumerBacklogSizeGB",
	"transactionSize", "transactionAbortRate", "transactionCommitInterval"}

// sweepScopes are the driver-setting prefixes a sweep may vary.
var sweepScopes = []string{"producer.", "consumer.", "topic.", "common."}

// LoadStudy reads and validates a study file.
func LoadStudy(path string) (*Study, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: read study: %w (check the path)", ErrInvalid, err)
	}
	return ParseStudy(path, data)
}

// ParseStudy reads a study from data; name is used in errors and to resolve
// the paths of workload files.
func ParseStudy(name string, data []byte) (*Study, error) {
	root, err := parseYAML(name, data)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name}
	s := &Study{Source: name, Iterations: 1}
	var inline []*yaml.Node
	var files []*yaml.Node
	seen := d.mapping(root, "a brokerbench study", map[string]fieldSetter{
		"name":        stringField(&s.Name),
		"description": stringField(&s.Description),
		"iterations":  intField(&s.Iterations, 1, 1000),
		"workload": func(d *decoder, key string, v *yaml.Node) {
			inline = append(inline, v)
		},
		"workloads": func(d *decoder, key string, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
				d.fail(v, key, "must be a list of workload files or inline workloads")
				return
			}
			for _, item := range v.Content {
				if item.Kind == yaml.MappingNode {
					inline = append(inline, item)
				} else {
					files = append(files, item)
				}
			}
		},
		"setups": func(d *decoder, key string, v *yaml.Node) {
			s.Setups = d.setups(v)
		},
		"sweep": func(d *decoder, key string, v *yaml.Node) {
			s.Sweep = d.sweep(v)
		},
		"quick": func(d *decoder, key string, v *yaml.Node) {
			d.mapping(v, "the quick scale", map[string]fieldSetter{
				"warmup":     durationField(&s.Quick.Warmup, 0),
				"duration":   durationField(&s.Quick.Duration, time.Second),
				"messages":   int64Field(&s.Quick.Messages),
				"iterations": intField(&s.Quick.Iterations, 1, 1000),
				"set": func(d *decoder, key string, v *yaml.Node) {
					for _, p := range d.sweep(v) {
						if len(p.Values) != 1 {
							d.fail(v, p.Name, "quick.set takes one value per parameter")
							continue
						}
						s.Quick.Set = append(s.Quick.Set, p)
					}
				},
			})
		},
		"price": func(d *decoder, key string, v *yaml.Node) {
			p := &Price{Currency: "USD"}
			d.mapping(v, "price", map[string]fieldSetter{
				"perNodeHour": floatField(&p.PerNodeHour, 0, 1e6),
				"nodes":       intField(&p.Nodes, 0, 10000),
				"currency":    stringField(&p.Currency),
			})
			s.Price = p
		},
		"columns": func(d *decoder, key string, v *yaml.Node) {
			s.Columns = d.stringList(key, v)
			s.ColumnsLine = v.Line
		},
		"published": func(d *decoder, key string, v *yaml.Node) {
			s.Published = d.published(v)
		},
	})
	if s.Name == "" {
		d.fail(root, "name", "missing: every study needs a name")
	}
	if len(inline) == 0 && len(files) == 0 {
		d.fail(root, "workload", "missing: give an inline workload (workload:) or workload files (workloads:)")
	}
	for _, n := range inline {
		// Inline workloads are in the native format, decoded in place so
		// that errors point at the study file's own lines.
		w := d.native(n)
		w.Source = name
		if w.PayloadFile != "" && !filepath.IsAbs(w.PayloadFile) {
			w.PayloadFile = filepath.Join(filepath.Dir(name), w.PayloadFile)
		}
		s.Workloads = append(s.Workloads, w)
	}
	for _, n := range files {
		f := n.Value
		if n.Kind != yaml.ScalarNode || f == "" {
			d.fail(n, "workloads", "list items must be workload file paths or inline workload mappings")
			continue
		}
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(name), f)
		}
		w, err := Load(f)
		if err != nil {
			d.errs = append(d.errs, fmt.Errorf("%s: workloads: %w", name, err))
			continue
		}
		s.Workloads = append(s.Workloads, w)
	}
	if len(s.Setups) == 0 {
		s.Setups = []Setup{{Name: "default", Brokers: 1}}
	}
	names := map[string]bool{}
	for _, st := range s.Setups {
		if names[st.Name] {
			d.fail(seen["setups"], "setups", "setup name %q is used twice; names label the report's rows", st.Name)
		}
		names[st.Name] = true
	}
	for _, st := range s.Setups {
		for _, name := range st.Only {
			if !slices.ContainsFunc(s.Workloads, func(w *Workload) bool { return w.Name == name }) {
				d.fail(seen["setups"], "only", "setup %q names workload %q, which the study does not have", st.Name, name)
			}
		}
	}
	d.errs = append(d.errs, s.checkPublished()...)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	for _, w := range s.Workloads {
		if err := w.Validate(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (d *decoder) stringList(key string, v *yaml.Node) []string {
	if v.Kind != yaml.SequenceNode {
		d.fail(v, key, "must be a list, e.g. [a, b]")
		return nil
	}
	var out []string
	for _, item := range v.Content {
		if item.Kind != yaml.ScalarNode || item.Value == "" {
			d.fail(item, key, "list items must be non-empty scalars")
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

func (d *decoder) setups(v *yaml.Node) []Setup {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		d.fail(v, "setups", "must be a non-empty list of setups (name, brokers, replicationFactor, driver, network, needs, only, sweep, workers, brokerVersion)")
		return nil
	}
	var out []Setup
	for _, item := range v.Content {
		st := Setup{Brokers: 1}
		d.mapping(item, "a setup", map[string]fieldSetter{
			"name":              stringField(&st.Name),
			"brokers":           intField(&st.Brokers, 1, 1000),
			"replicationFactor": intField(&st.ReplicationFactor, 1, 100),
			"needs":             enumField(&st.Needs, "cluster", "faults", "network"),
			"only": func(d *decoder, key string, v *yaml.Node) {
				st.Only = d.stringList(key, v)
			},
			"sweep": func(d *decoder, key string, v *yaml.Node) {
				st.Sweep = d.sweep(v)
			},
			"driver": func(d *decoder, key string, v *yaml.Node) {
				st.Driver = d.driverConfig(v, false)
			},
			"network":       networkField(&st.Network),
			"workers":       intField(&st.Workers, 1, 256),
			"brokerVersion": stringField(&st.BrokerVersion),
		})
		if st.Name == "" {
			d.fail(item, "name", "missing: every setup needs a name")
		}
		if st.Brokers > 1 && st.Needs == "" {
			st.Needs = "cluster"
		}
		out = append(out, st)
	}
	return out
}

func (d *decoder) sweep(v *yaml.Node) []SweepParam {
	if v.Kind != yaml.MappingNode {
		d.fail(v, "sweep", "must be a mapping of parameter: [values]")
		return nil
	}
	var out []SweepParam
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, vals := v.Content[i], v.Content[i+1]
		p := SweepParam{Name: k.Value, File: d.file, Line: k.Line}
		if !slices.Contains(sweepFields, p.Name) && p.Name != BrokerVersionParam && !slices.ContainsFunc(sweepScopes, func(s string) bool {
			return strings.HasPrefix(p.Name, s) && len(p.Name) > len(s)
		}) {
			d.fail(k, p.Name, "cannot be swept%s; sweep one of %s, %s, or a driver setting prefixed with %s",
				suggest(p.Name, sweepFields), strings.Join(sweepFields, ", "), BrokerVersionParam, strings.Join(sweepScopes, ", "))
			continue
		}
		p.Values = d.stringList(p.Name, vals)
		if len(p.Values) == 0 {
			d.fail(vals, p.Name, "needs at least one value")
			continue
		}
		for _, val := range p.Values {
			if err := checkSweepValue(p, val); err != nil {
				d.errs = append(d.errs, err)
			}
		}
		out = append(out, p)
	}
	return out
}

func checkSweepValue(p SweepParam, val string) error {
	if !slices.Contains(sweepFields, p.Name) {
		return nil // driver settings are checked by the driver, releases by the broker's local kind
	}
	var w Workload
	return w.SetField(p.File, p.Line, p.Name, val)
}

// ApplySweep sets one swept parameter on a run's workload and driver config
// (both already copies owned by the run); BrokerVersionParam sets
// neither (the run's setup holds it).
func ApplySweep(w *Workload, dc *DriverConfig, p SweepParam, val string) error {
	if p.Name == BrokerVersionParam {
		return nil
	}
	for _, scope := range sweepScopes {
		key, ok := strings.CutPrefix(p.Name, scope)
		if !ok {
			continue
		}
		prop := Property{Key: key, Value: val, File: p.File, Line: p.Line}
		switch scope {
		case "producer.":
			dc.Producer = append(slices.Clone(dc.Producer), prop)
		case "consumer.":
			dc.Consumer = append(slices.Clone(dc.Consumer), prop)
		case "topic.":
			dc.Topic = append(slices.Clone(dc.Topic), prop)
		default:
			dc.Common = append(slices.Clone(dc.Common), prop)
		}
		return nil
	}
	return w.SetField(p.File, p.Line, p.Name, val)
}
