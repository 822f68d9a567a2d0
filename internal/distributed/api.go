// Package distributed spreads one workload over several worker processes,
// on one machine or many, and merges what they measured into the results
// one process would have given: rates split exactly, histograms merged
// exactly (never averaged percentiles), sequence sets merged so that lost
// and duplicated messages stay exact across workers.
//
// A worker (Worker) serves a small HTTP+JSON API under APIPrefix. The
// coordinator (Run) measures each worker's clock offset, gives each its
// Assignment, waits until every worker is ready, names one absolute start
// instant (the start barrier), follows every worker's event stream, tells
// them when all producers finished and when all subscriptions caught up,
// and merges their results. A worker stops its run when the coordinator
// stops it, closes its event stream or stops renewing its lease, so no
// load outlives its coordinator. docs/distributed.md describes the model.
//
// HTTP+JSON was chosen over gRPC: the messages are few and small (one
// event per interval and worker), the standard library serves and reads
// them, and anyone can query a worker with curl.
package distributed

import (
	"fmt"

	"github.com/brokerbench/brokerbench/internal/accounting"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// APIVersion names the API; a coordinator refuses a worker that speaks
// another.
const APIVersion = "brokerbench-worker/v1"

// APIPrefix is the path every endpoint is under.
const APIPrefix = "/v1"

// Endpoints, under APIPrefix.
const (
	// PathInfo: GET, the worker's Info.
	PathInfo = "/info"
	// PathTime: GET, the worker's clock (TimeReply), for offset samples.
	PathTime = "/time"
	// PathRun: POST an Assignment to begin preparing it (202, or 409 when
	// the worker is busy).
	PathRun = "/run"
	// PathEvents: GET, the run's events as JSON lines, until done.
	PathEvents = "/run/events"
	// PathProgress: GET, the run's Progress now.
	PathProgress = "/run/progress"
	// PathStart: POST a StartCommand: the barrier's start instant.
	PathStart = "/run/start"
	// PathAllSent: POST, every worker's producers sent their limit.
	PathAllSent = "/run/all-sent"
	// PathCaughtUp: POST, every subscription caught up: end the drain.
	PathCaughtUp = "/run/caught-up"
	// PathLease: POST, the coordinator is alive; renews the lease.
	PathLease = "/run/lease"
	// PathStop: POST, stop producing and finish (an interrupt).
	PathStop = "/run/stop"
)

// Info describes a worker.
type Info struct {
	API      string `json:"api"`
	Version  string `json:"version"`
	Hostname string `json:"hostname"`
	Cores    int    `json:"cores"`
	// Busy is true while the worker runs an assignment.
	Busy bool `json:"busy"`
}

// TimeReply is the worker's clock (clock.Now) when it answered.
type TimeReply struct {
	Now int64 `json:"now"`
}

// DriverSource tells a worker how to make its driver, the same one the
// coordinator made. The driver settings travel as the text of the file
// they came from, not as values: references to secrets (${env:...},
// ${file:...}) are expanded by the worker in its own environment, and no
// secret crosses the wire.
type DriverSource struct {
	// Name is the file's name (for errors); Text its content; empty Text
	// means the default Kafka driver.
	Name string `json:"name,omitempty"`
	Text string `json:"text,omitempty"`
	// Inline says the text is a workload file whose inline "driver"
	// section holds the settings.
	Inline bool `json:"inline,omitempty"`
	// Config, when set, is the driver config itself, for settings that no
	// file holds as they are (a study's setups and sweeps). NewConfigSource
	// refuses one that holds a secret.
	Config *workload.DriverConfig `json:"config,omitempty"`
	// Endpoints, when set, replace the config's broker addresses (a local
	// cluster's, or --broker).
	Endpoints []string `json:"endpoints,omitempty"`
}

// NewConfigSource returns a source that carries dc's settings as values,
// with the endpoints: for settings no file holds as they are. A setting
// that holds a secret (from ${env:...} or ${file:...}) is refused: it
// would cross the wire.
func NewConfigSource(dc *workload.DriverConfig, endpoints []string) (DriverSource, error) {
	for _, props := range []workload.Properties{dc.Topic, dc.Common, dc.Producer, dc.Consumer} {
		for _, p := range props {
			if secret.Redact(p.Value) != p.Value {
				return DriverSource{}, fmt.Errorf("the driver setting %s of %s holds a secret, which workers would receive over the wire: give the workers the driver config as a file (run --driver)", p.Key, dc.Source)
			}
		}
	}
	return DriverSource{Name: dc.Source, Config: dc, Endpoints: endpoints}, nil
}

// Assignment is one worker's share of a run.
type Assignment struct {
	RunID    string             `json:"runId"`
	Workload *workload.Workload `json:"workload"`
	Driver   DriverSource       `json:"driver"`
	// Topics are the run's topics, made by the coordinator; Existing says
	// they held messages before the run (consumers read from the start of
	// the measurement).
	Topics   []string `json:"topics"`
	Existing bool     `json:"existing,omitempty"`
	// Producers and Consumers are global ids (see runner.Part).
	Producers []int `json:"producers"`
	Consumers []int `json:"consumers"`
	// SkewNanos, per producer id, is that producer's worker's clock minus
	// this worker's, added to end-to-end latencies.
	SkewNanos []int64 `json:"skewNanos,omitempty"`

	IntervalNanos     int64 `json:"intervalNanos"`
	DrainTimeoutNanos int64 `json:"drainTimeoutNanos"`
	SetupTimeoutNanos int64 `json:"setupTimeoutNanos"`
	MaxSendLagNanos   int64 `json:"maxSendLagNanos"`
	// LeaseNanos: the worker stops the run when the coordinator has not
	// renewed its lease for this long.
	LeaseNanos int64 `json:"leaseNanos"`
}

// Progress is a run's delivery progress, for the coordinator to tell when
// the subscriptions have caught up.
type Progress struct {
	// Distinct is how many different messages the worker's consumers
	// received, summed over subscriptions; Acked how many of its
	// producers' messages were acknowledged.
	Distinct int64 `json:"distinct"`
	Acked    int64 `json:"acked"`
	// Draining says the worker's producers stopped and it waits for the
	// subscriptions to catch up.
	Draining bool `json:"draining"`
}

// StartCommand names the instant, on the worker's clock, at which the
// run's clock starts.
type StartCommand struct {
	StartAt int64 `json:"startAt"`
}

// EventKind names an Event.
type EventKind string

// Event kinds, in the order a run sends them.
const (
	// Prepared: clients are set up; the worker waits for PathStart.
	Prepared EventKind = "prepared"
	// IntervalDone: one interval, with its histograms and the distinct
	// messages this worker's consumers received so far.
	IntervalDone EventKind = "interval"
	// SentAll: this worker's producers sent their message limit.
	SentAll EventKind = "sent-all"
	// Draining: this worker's producers stopped; it waits for the
	// coordinator's caught-up.
	Draining EventKind = "draining"
	// Done: the run ended; Part holds what it measured.
	Done EventKind = "done"
	// Failed: the run could not be made; Error says why.
	Failed EventKind = "failed"
)

// Event is one line of a worker's event stream.
type Event struct {
	Kind       EventKind           `json:"kind"`
	Interval   *results.Interval   `json:"interval,omitempty"`
	Histograms *results.Histograms `json:"histograms,omitempty"`
	Distinct   int64               `json:"distinct,omitempty"`
	Part       *PartResult         `json:"part,omitempty"`
	Error      string              `json:"error,omitempty"`
}

// PartResult is what one worker measured.
type PartResult struct {
	// Run is the worker's own results: its intervals, aggregate with
	// encoded histograms, counters and warnings (no reconciliation).
	Run *results.Run `json:"run"`
	// RunError is the run's error, if it returned one with its results.
	RunError string `json:"runError,omitempty"`
	// StartLateNanos is how long after the start instant the worker's
	// run actually started.
	StartLateNanos int64 `json:"startLateNanos"`
	// Outcomes, by global producer id (zero for other workers'), and the
	// deliveries to its consumers, by subscription.
	Outcomes   []accounting.Outcome       `json:"outcomes"`
	Deliveries []*accounting.Subscription `json:"deliveries"`
}
