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
	"github.com/brokerbench/brokerbench/internal/output"
	"github.com/brokerbench/brokerbench/internal/results"
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

// topicRegistry is the output that records a run's topics in the
// machine's registry until they are deleted: a run killed outright leaves
// its entry, and the next run against the same broker removes its topics.
type topicRegistry struct {
	output.Base
	// target names the broker; journal is the run's journal, "" for none.
	target, journal string
	// keepTopics: the run's topics stay on purpose (--keep-topics, or
	// existing topics), so they are not left behind.
	keepTopics bool
	tracker    *leftovers.Tracker
}

var (
	_ output.Output        = (*topicRegistry)(nil)
	_ output.TopicRecorder = (*topicRegistry)(nil)
)

// Start starts the run's entry, written with its first topic.
func (r *topicRegistry) Start(head *results.Run) error {
	r.tracker = registry().Track(leftovers.Entry{RunID: head.ID, StartedAt: head.StartedAt, Driver: head.Driver.Name, Target: r.target, Journal: r.journal})
	return nil
}

// CreatingTopic records the topic before it is created.
func (r *topicRegistry) CreatingTopic(name string) { r.tracker.CreatingTopic(name) }

// DeletedTopic records that the topic is gone.
func (r *topicRegistry) DeletedTopic(name string) { r.tracker.DeletedTopic(name) }

// Stop ends the entry of a run that ended in this process: a run that
// keeps its topics on purpose leaves none. It returns what went wrong
// with the registry.
func (r *topicRegistry) Stop(*results.Run, bool) error {
	if r.keepTopics {
		r.tracker.Release()
	}
	return r.tracker.Err()
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
