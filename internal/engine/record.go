package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/leftovers"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/runner"
)

// RegistryEnv names the registry's directory, if set; by default it is
// "runs" in the brokerbench cache.
const RegistryEnv = "BROKERBENCH_RUNS_DIR"

// registry is the machine's registry of the topics runs create.
func registry() *leftovers.Registry {
	if d := os.Getenv(RegistryEnv); d != "" {
		return leftovers.Open(d)
	}
	return leftovers.Open(filepath.Join(local.DefaultCacheDir(), "runs"))
}

// targetKey names the broker a driver works against, for the registry: its
// endpoints, or the driver config that holds them.
func targetKey(env results.Environment, driverSource string) string {
	if env.BrokerEndpoint != "" {
		return env.BrokerEndpoint
	}
	return "the addresses in " + driverSource
}

// runRecord keeps a run's progress where a killed run leaves it: the
// journal beside the results (nil for none) and the topic registry.
type runRecord struct {
	journal *results.Journal
	topics  *leftovers.Tracker
	// keepTopics: the run's topics stay on purpose (--keep-topics, or
	// existing topics), so they are not left behind.
	keepTopics bool
}

var _ runner.Journal = (*runRecord)(nil)

func (r *runRecord) CreatingTopic(name string) {
	r.topics.CreatingTopic(name)
	if r.journal != nil {
		r.journal.CreatingTopic(name)
	}
}

func (r *runRecord) DeletedTopic(name string) {
	r.topics.DeletedTopic(name)
	if r.journal != nil {
		r.journal.DeletedTopic(name)
	}
}

func (r *runRecord) Interval(iv results.Interval, h results.Histograms) {
	if r.journal != nil {
		r.journal.Interval(iv, h)
	}
}

// finish closes the record of a run that ended in this process: the
// journal is removed if the results were written (written), and a run
// that keeps its topics on purpose leaves no registry entry. It returns
// what went wrong with either, for the user.
func (r *runRecord) finish(written bool) error {
	if r.keepTopics {
		r.topics.Release()
	}
	errs := []error{r.topics.Err()}
	if r.journal != nil {
		errs = append(errs, r.journal.Close(written))
	}
	return errors.Join(errs...)
}

// startRecord starts the record of a run that a kill cannot erase: its
// topics in the machine's registry, and its progress in a journal at
// journalPath ("" for none). head is the run as known before it starts;
// its start time is set here.
func startRecord(head *results.Run, target, journalPath string, keepTopics bool) (*runRecord, error) {
	head.StartedAt = time.Now().UTC()
	rec := &runRecord{keepTopics: keepTopics}
	entry := leftovers.Entry{RunID: head.ID, StartedAt: head.StartedAt, Driver: head.Driver.Name, Target: target}
	if journalPath != "" {
		j, err := results.CreateJournal(journalPath, head)
		if err != nil {
			return nil, badInput(fmt.Errorf("%w (the journal goes beside the results)", err))
		}
		rec.journal, entry.Journal = j, journalPath
	}
	rec.topics = registry().Track(entry)
	return rec, nil
}

// elsewhereOnce says once per process that dead runs left topics on
// other brokers.
var elsewhereOnce sync.Once

// cleanLeftovers removes the topics that dead runs created on this target
// with this driver and left behind, says what it removed, and forgets those
// runs. Runs on other targets are only counted, with a pointer to
// 'brokerbench clean'. Failures are reported and do not stop the caller.
func cleanLeftovers(ctx context.Context, io IO, drv driver.Driver, driverName, target string) {
	reg := registry()
	dead, err := reg.Dead()
	if err != nil {
		fmt.Fprintf(io.Err, "topic registry: %v\n", err)
		return
	}
	elsewhere := 0
	for _, e := range dead {
		if e.Driver != driverName || e.Target != target {
			elsewhere++
			continue
		}
		left := removeTopics(ctx, io, drv, e)
		if err := reg.Update(e, left); err != nil {
			fmt.Fprintf(io.Err, "topic registry: %v\n", err)
		}
	}
	if elsewhere > 0 {
		elsewhereOnce.Do(func() {
			fmt.Fprintf(io.Err, "%d dead run(s) left topics on other brokers; 'brokerbench clean --list' shows them\n", elsewhere)
		})
	}
}

// removeTopics deletes a dead run's topics and returns those it could not.
func removeTopics(ctx context.Context, io IO, drv driver.Driver, e leftovers.Entry) []string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var left []string
	for _, t := range e.Topics {
		if err := drv.DeleteTopic(ctx, t); err != nil && !errors.Is(err, driver.ErrTopicNotFound) {
			left = append(left, t)
			fmt.Fprintf(io.Err, "could not remove topic %s left by run %s: %v\n", t, e.RunID, err)
		}
	}
	if removed := len(e.Topics) - len(left); removed > 0 {
		fmt.Fprintf(io.Err, "removed %d topic(s) left by run %s (pid %d, started %s, did not finish): %s\n",
			removed, e.RunID, e.PID, e.StartedAt.Local().Format(time.DateTime), strings.Join(e.Topics, ", "))
	}
	if e.Journal != "" {
		fmt.Fprintf(io.Err, "its journal, if still there: %s (read it with 'brokerbench report')\n", e.Journal)
	}
	return left
}
