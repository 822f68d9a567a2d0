package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Recheck makes the last run before and the first run after each change
// point of checked again, n times each, alternately, and prints whether
// the reruns confirm each change (history.ReportReruns). Each rerun is
// the recorded run's workload and effective driver settings, read from
// its results file, on the target o names (o.Broker, else the local
// cluster); when the two sides ran on different broker releases, each is
// made on a local cluster of its own release. The reruns are recorded in
// o.History with the repeated run's labels and rerun=<its id>. Every rerun is
// planned before the first is made: a run that cannot be made again
// fails the recheck before any broker time is spent. It returns an error
// wrapping history.ErrRegression when a regression beyond threshold is
// confirmed.
func Recheck(ctx context.Context, io IO, checked *history.Checked, n int, threshold float64, o RunOptions) error {
	if n < 1 || n > history.MaxReruns {
		return badInputf("--rerun: must be between 1 and %d, got %d", history.MaxReruns, n)
	}
	pairs := history.Pairs(checked.Changes)
	plans := map[string]*rerunPlan{}
	for _, p := range pairs {
		ownRelease := p.Last.Env.BrokerVersion != p.First.Env.BrokerVersion
		if ownRelease && o.Broker != "" {
			return badInputf("--rerun: the runs on either side of the change point at run %s ran on different broker releases (%s, %s), which the one broker given cannot both be: leave the broker address out to rerun each on a local cluster of its release",
				p.First.ID, p.Last.Env.BrokerVersion, p.First.Env.BrokerVersion)
		}
		for _, rec := range []history.Record{p.Last, p.First} {
			plan, err := planRerun(rec, ownRelease)
			if err != nil {
				return err
			}
			plans[rec.ID] = plan
		}
	}
	// The reruns' summaries go with the progress: the check's report is
	// what the command produces.
	runIO := IO{Out: io.Err, Err: io.Err}
	var reran []*history.Reran
	for _, p := range pairs {
		fmt.Fprintf(io.Err, "rerunning %s and %s, %d time(s) each\n", p.Last.ID, p.First.ID, n)
		r, err := p.Rerun(ctx, n, func(ctx context.Context, rec history.Record) (map[string]float64, error) {
			return plans[rec.ID].run(ctx, runIO, o)
		})
		if err != nil {
			return err
		}
		reran = append(reran, r)
	}
	return history.ReportReruns(io.Out, reran, threshold)
}

// rerunPlan is what a recorded run is made again from.
type rerunPlan struct {
	id string
	// labels are the recorded run's: its reruns have them too.
	labels map[string]string
	w      workload.Workload
	dc     *workload.DriverConfig
	// release is the broker release of the local cluster to rerun on;
	// "": the target's own.
	release string
}

// planRerun reads what rec's run is made again from: its results file's
// workload and driver, and, if ownRelease, its broker release.
func planRerun(rec history.Record, ownRelease bool) (*rerunPlan, error) {
	cannot := func(err error) error {
		return badInputf("run %s cannot be made again: %w", rec.ID, err)
	}
	if rec.File == "" {
		return nil, cannot(errors.New("the history holds no results file of it"))
	}
	res, err := results.Read(rec.File)
	if err != nil {
		return nil, cannot(err)
	}
	dc, err := DriverFromResults(res.Driver)
	if err != nil {
		return nil, cannot(fmt.Errorf("%s: %w", rec.File, err))
	}
	plan := &rerunPlan{id: rec.ID, labels: rec.Labels, w: *res.Workload, dc: dc}
	if ownRelease {
		v := strings.Fields(rec.Env.BrokerVersion)
		if len(v) == 0 {
			return nil, cannot(errors.New("its broker release is not recorded, and the run on the other side of the change ran on another"))
		}
		plan.release = v[len(v)-1]
	}
	return plan, nil
}

// run makes the planned run once on o's target, recorded with the
// recorded run's labels and rerun=<its id>, and returns its figures. A run whose verdict says its
// target was not held (or the machine was busy) still gives its figures,
// as the recorded runs did; one that measured nothing, or was
// interrupted, is an error.
func (p *rerunPlan) run(ctx context.Context, io IO, o RunOptions) (map[string]float64, error) {
	o.Progress = false
	o.Out, o.OMBJSON = "", ""
	o.History.Labels = maps.Clone(p.labels)
	if o.History.Labels == nil {
		o.History.Labels = map[string]string{}
	}
	o.History.Labels[history.RerunLabel] = p.id
	if p.release != "" {
		o.Local.Version = p.release
	}
	w := p.w
	res, err := RunLoaded(ctx, io, &w, p.dc, o)
	if res == nil || KindOf(err) == Interrupted || KindOf(err) == RunFailed {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(io.Err, "rerun of %s: %v (its figures are kept, as the recorded run's were)\n", p.id, err)
	}
	return history.Figures(res), nil
}

// DriverFromResults rebuilds the driver config of a run from its results
// file's driver: its name, format, replication factor and effective
// settings, by section (a driver's "client" section is its common one).
// The setting holding the broker's addresses is left out: where a rerun
// goes is its target's to say. A secret, masked in the results, cannot be
// rebuilt: it is an error naming the setting.
func DriverFromResults(d results.Driver) (*workload.DriverConfig, error) {
	dc := &workload.DriverConfig{Name: d.Name, Format: d.Format, ReplicationFactor: d.ReplicationFactor, Source: "the results of a run"}
	sections := map[string]*workload.Properties{
		"topic": &dc.Topic, "common": &dc.Common, "client": &dc.Common, "producer": &dc.Producer, "consumer": &dc.Consumer,
	}
	reg, _ := brokers.Lookup(d.Name)
	for _, name := range slices.Sorted(maps.Keys(d.Effective)) {
		into, ok := sections[name]
		if !ok {
			return nil, fmt.Errorf("driver section %q is not one a driver config has (topic, common, producer, consumer)", name)
		}
		for _, p := range d.Effective[name] {
			if strings.Contains(p.Value, secret.Mask) || workload.IsSecret(p.Key) {
				return nil, fmt.Errorf("the driver setting %s/%s is a secret, masked in the results: run the benchmark again by hand with its driver file (brokerbench run WORKLOAD --driver FILE)", name, p.Key)
			}
			if slices.Contains(reg.EndpointSettings, p.Key) {
				continue
			}
			*into = append(*into, workload.Property{Key: p.Key, Value: p.Value})
		}
	}
	return dc, nil
}
