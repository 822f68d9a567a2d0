// Package study expands a study (workloads x setups x sweep x iterations)
// into runs, executes them one after another into a results directory, and
// resumes an interrupted study without redoing finished runs.
package study

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Scale selects how much of a study to run.
type Scale string

// Scales.
const (
	// Quick applies the study's quick overrides (default warmup 1 s,
	// duration 5 s) so a whole study takes minutes.
	Quick Scale = "quick"
	// Full keeps the published parameters.
	Full Scale = "full"
	// Smoke is Quick cut to one short run per setup: one iteration, the
	// first value of each swept parameter, no warmup, 1 s of measurement
	// (or until 2 s after the last fault ends), at most smokeMessages
	// messages. It checks a study's
	// plan, setups and report end to end in about a minute; its figures
	// mean nothing.
	// A sweep of the broker release keeps all its values.
	Smoke Scale = "smoke"
)

// smokeMessages bounds a smoke run's message limit.
const smokeMessages = 20_000

// ParseScale checks a --scale value.
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case Quick, Full, Smoke:
		return Scale(s), nil
	}
	return "", fmt.Errorf("unknown scale %q: use smoke, quick or full", s)
}

// reduced reports whether scale applies the study's quick section.
func (scale Scale) reduced() bool { return scale == Quick || scale == Smoke }

// Run is one planned run.
type Run struct {
	// Key identifies the run within the study and names its results file.
	Key      string
	Workload *workload.Workload
	// Driver is the run's own copy of the driver settings.
	Driver    *workload.DriverConfig
	Setup     workload.Setup
	Params    []results.Param
	Iteration int // from 1
	// Skip, if set, says why the run cannot be made here.
	Skip string
}

// Target says what the runs go to.
type Target struct {
	// Brokers is the number of brokers of the cluster the runs go to: for
	// a local target, the most brokers a local cluster may have (each
	// setup gets a cluster of its size); for a cluster given by address,
	// its count. Setups with more brokers than that are skipped.
	Brokers int
	// Local is true when the runs go to local clusters brokerbench
	// starts: only those can take faults.
	Local bool
	// CheckWorkers, if set, says why runs of a workload cannot be spread
	// over n workers (nil: they can); without it, setups with workers are
	// planned unchecked.
	CheckWorkers func(w *workload.Workload, n int) error
}

// Plan expands s at scale into runs, in the study's order: workload,
// setup, sweep values (last parameter fastest), then iteration. Execute
// makes them setup by setup, in this order within each.
func Plan(s *workload.Study, scale Scale, target Target) ([]Run, error) {
	var runs []Run
	iterations := s.Iterations
	if scale == Quick && s.Quick.Iterations > 0 {
		iterations = s.Quick.Iterations
	}
	if scale == Smoke {
		iterations = 1
	}
	for wi, base := range s.Workloads {
		for _, setup := range s.Setups {
			if len(setup.Only) > 0 && !slices.Contains(setup.Only, base.Name) {
				continue
			}
			sweep := append(slices.Clone(s.Sweep), setup.Sweep...)
			if scale.reduced() {
				sweep = narrowed(sweep, s.Quick.Set)
			}
			if scale == Smoke {
				sweep = firstValues(sweep)
			}
			for _, combo := range combinations(sweep) {
				for it := 1; it <= iterations; it++ {
					r, err := plan(s, base, setup, combo, it, scale, target)
					if err != nil {
						return nil, err
					}
					r.Key = key(wi, len(s.Workloads), base.Name, setup.Name, combo, it)
					runs = append(runs, r)
				}
			}
		}
	}
	return runs, nil
}

// firstValues returns sweep with each parameter cut to its first value,
// but for the broker release, which is compared as setups are.
func firstValues(sweep []workload.SweepParam) []workload.SweepParam {
	out := slices.Clone(sweep)
	for i := range out {
		if out[i].Name != workload.BrokerVersionParam {
			out[i].Values = out[i].Values[:1]
		}
	}
	return out
}

// narrowed returns sweep with the values of every parameter that set
// fixes replaced by set's, so that a swept parameter fixed at a scale
// gives one run per value set names, labelled with that value (not one
// run per swept value, each with set's value under the swept label).
func narrowed(sweep, set []workload.SweepParam) []workload.SweepParam {
	out := slices.Clone(sweep)
	for i, p := range out {
		for _, q := range set {
			if q.Name == p.Name {
				out[i].Values = q.Values
			}
		}
	}
	return out
}

func plan(s *workload.Study, base *workload.Workload, setup workload.Setup, combo []assignment, it int, scale Scale, target Target) (Run, error) {
	w := *base
	var dc workload.DriverConfig
	switch {
	case setup.Driver != nil:
		dc = *setup.Driver
	case base.Driver != nil:
		dc = *base.Driver
	default:
		dc = workload.DriverConfig{Name: "kafka", Format: workload.Native, ReplicationFactor: 1, Source: s.Source}
	}
	w.Driver = nil
	if setup.ReplicationFactor > 0 {
		w.ReplicationFactor = setup.ReplicationFactor
	}
	var params []results.Param
	for _, a := range combo {
		if a.param.Name == workload.BrokerVersionParam {
			setup.BrokerVersion = a.value
		}
		if err := workload.ApplySweep(&w, &dc, a.param, a.value); err != nil {
			return Run{}, fmt.Errorf("%s: sweep %s=%s: %w", s.Source, a.param.Name, a.shown(), err)
		}
		params = append(params, results.Param{Name: a.param.Name, Value: a.shown()})
	}
	if err := scaled(s, &w, &dc, scale); err != nil {
		return Run{}, err
	}
	if err := w.Validate(); err != nil {
		return Run{}, fmt.Errorf("%s: setup %s %v: %w", s.Source, setup.Name, params, err)
	}
	r := Run{Workload: &w, Driver: &dc, Setup: setup, Params: params, Iteration: it}
	// Local targets are clusters brokerbench starts at each setup's size;
	// a cluster given by address has the size it has. Setups that shape
	// the network or inject faults wait for those capabilities.
	switch {
	case len(w.Faults) > 0 && !target.Local:
		r.Skip = fmt.Sprintf("workload %q has a fault schedule; faults act on the local clusters brokerbench starts: leave out --broker", w.Name)
	case setup.BrokerVersion != "" && !target.Local:
		r.Skip = fmt.Sprintf("setup %q runs broker release %s on a local cluster brokerbench starts: leave out --broker", setup.Name, setup.BrokerVersion)
	case setup.Network != nil && !target.Local:
		r.Skip = fmt.Sprintf("setup %q shapes the network (%s) between the nodes of a local cluster brokerbench starts: leave out --broker", setup.Name, setup.Network)
	case setup.Needs == "network" && setup.Network == nil:
		r.Skip = fmt.Sprintf("setup %q needs a shaped network but does not say which: give it network: {zones: N, delay: D, jitter: J}", setup.Name)
	case (setup.Needs == "cluster" || setup.Needs == "network") && target.Brokers >= setup.Brokers:
		// The target has, or can start, the brokers the setup needs.
	case setup.Needs == "cluster" || setup.Needs == "network":
		r.Skip = fmt.Sprintf("setup %q needs %d brokers and the target has %d: give a cluster of that size with --broker, or leave --broker out and brokerbench starts a local one",
			setup.Name, setup.Brokers, target.Brokers)
	case setup.Needs != "":
		r.Skip = fmt.Sprintf("setup %q needs the %s capability, which brokerbench does not have yet", setup.Name, setup.Needs)
	case max(w.ReplicationFactor, dc.ReplicationFactor) > setup.Brokers:
		rf := max(w.ReplicationFactor, dc.ReplicationFactor)
		r.Skip = fmt.Sprintf("replication factor %d needs at least %d brokers; setup %q has %d", rf, rf, setup.Name, setup.Brokers)
	case setup.Workers > 0 && target.CheckWorkers != nil:
		if err := target.CheckWorkers(&w, setup.Workers); err != nil {
			r.Skip = fmt.Sprintf("setup %q spreads runs over %d workers: %v", setup.Name, setup.Workers, err)
		}
	}
	return r, nil
}

// assignment is one swept parameter's value in a run.
type assignment struct {
	param workload.SweepParam
	value string
}

// shown is the value as results, file names and logs show it: a secret
// setting's value is replaced by its position among the swept values, so
// runs stay distinct and the secret is written nowhere.
func (a assignment) shown() string {
	if !workload.IsSecret(a.param.Name) {
		return a.value
	}
	return fmt.Sprintf("redacted-%d", slices.Index(a.param.Values, a.value)+1)
}

// combinations is the cartesian product of the sweep's values, the last
// parameter varying fastest; one empty combination without a sweep.
func combinations(sweep []workload.SweepParam) [][]assignment {
	out := [][]assignment{nil}
	for _, p := range sweep {
		var next [][]assignment
		for _, prefix := range out {
			for _, v := range p.Values {
				next = append(next, append(slices.Clone(prefix), assignment{p, v}))
			}
		}
		out = next
	}
	return out
}

// key builds a file-name-safe run key.
func key(wi, nWorkloads int, workloadName, setup string, combo []assignment, it int) string {
	parts := []string{}
	if nWorkloads > 1 {
		parts = append(parts, fmt.Sprintf("w%d-%s", wi+1, workloadName))
	}
	parts = append(parts, setup)
	for _, a := range combo {
		parts = append(parts, a.param.Name+"="+a.shown())
	}
	parts = append(parts, fmt.Sprintf("it%d", it))
	return results.FileName(strings.Join(parts, "_"))
}

// scaled applies scale to a planned run's workload w and driver config dc:
// the study's quick section at quick and smoke scale, then smoke's cuts.
func scaled(s *workload.Study, w *workload.Workload, dc *workload.DriverConfig, scale Scale) error {
	if scale.reduced() {
		q := s.Quick
		w.Warmup, w.Duration = time.Second, 5*time.Second
		if q.Warmup > 0 || q.Duration > 0 {
			w.Warmup, w.Duration = q.Warmup, q.Duration
		}
		// Message counts shrink; a backlog test's target shrinks with them
		// so that it can still be reached.
		if q.Messages > 0 && w.MessageLimit > q.Messages {
			w.MessageLimit = q.Messages
			if gb := float64(w.MessageLimit*int64(w.MessageSize)) / (1 << 30); w.ConsumerBacklogSizeGB > gb {
				w.ConsumerBacklogSizeGB = gb
			}
		}
		for _, p := range q.Set {
			if err := workload.ApplySweep(w, dc, p, p.Values[0]); err != nil {
				return fmt.Errorf("%s: quick.set %s=%s: %w", s.Source, p.Name, p.Values[0], err)
			}
		}
	}
	if scale == Smoke {
		// 1 s, or long enough for the fault schedule to play out.
		w.Warmup, w.Duration = 0, time.Second
		for _, f := range w.Faults {
			w.Duration = max(w.Duration, f.At+f.For+2*time.Second)
		}
		if w.MessageLimit > smokeMessages {
			w.MessageLimit = smokeMessages
		}
		if gb := float64(max(w.MessageLimit, smokeMessages)*int64(w.MessageSize)) / (1 << 30); w.ConsumerBacklogSizeGB > gb {
			w.ConsumerBacklogSizeGB = gb
		}
	}
	return nil
}
