// Package results defines brokerbench's results file (schema
// "brokerbench/results/v1", documented in docs/results.md), and writes it and
// OpenMessaging Benchmark's TestResult JSON.
package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/metrics"
	"github.com/brokerbench/brokerbench/internal/secret"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Schema identifies the results format version.
const Schema = "brokerbench/results/v1"

// Run is one benchmark run's results.
type Run struct {
	Schema string `json:"schema"`
	ID     string `json:"id"`
	// Partial is true when the run did not complete (interrupted, broker
	// lost); PartialReason says why. Everything measured until then is kept.
	Partial       bool      `json:"partial"`
	PartialReason string    `json:"partialReason,omitempty"`
	StartedAt     time.Time `json:"startedAt"`
	EndedAt       time.Time `json:"endedAt"`

	Environment Environment        `json:"environment"`
	Workload    *workload.Workload `json:"workload"`
	Driver      Driver             `json:"driver"`

	// IntervalSeconds is the nominal length of one Intervals entry.
	IntervalSeconds float64    `json:"intervalSeconds"`
	Intervals       []Interval `json:"intervals"`
	// Measured aggregates the measurement phase (after warmup, before the
	// producers stop).
	Measured Aggregate `json:"measured"`
	// Counts are whole-run message counts, warmup and drain included.
	Counts Counts `json:"counts"`
	// Target states whether a fixed-rate run held its rate.
	Target *Target `json:"target,omitempty"`
	// Price, if known, is the cost of the system under test, for cost per
	// message figures.
	Price *Price `json:"price,omitempty"`
	// Study places the run in a study; nil for a single run.
	Study *StudyRun `json:"study,omitempty"`
	// Backlog is set for a backlog test.
	Backlog *BacklogTest `json:"backlog,omitempty"`
	// MaxRate is set when the run is the result of a max sustainable rate
	// search: the steps measured and the rate found.
	MaxRate *MaxRateSearch `json:"maxRateSearch,omitempty"`
	// Histograms are the measurement phase's latency histograms, encoded in
	// HdrHistogram's compressed V2 format (base64), values in microseconds.
	Histograms Histograms `json:"histograms"`
	// Faults are the fault schedule's events, in the order they fired.
	Faults []FaultEvent `json:"faults,omitempty"`
	// LeaderMoves, in a run with faults, counts the partitions of the
	// run's topics whose leader after the run differs from the one at the
	// start of the measurement; nil when the driver cannot tell.
	LeaderMoves *int `json:"leaderMoves,omitempty"`
	// BrokerStopped, in a run without faults on a local cluster
	// brokerbench knows, names a line each the nodes that ran when the
	// run began and no longer ran as the same process when it ended:
	// killed or stopped from outside, crashed, or started again.
	BrokerStopped []string `json:"brokerStopped,omitempty"`
	// Distributed is set for a run spread over several workers: how, and
	// what each worker measured. Everything else in the run is merged
	// over the workers.
	Distributed *Distribution `json:"distributed,omitempty"`
	Warnings    []string      `json:"warnings,omitempty"`
	// Payloads describes the payload pool a run with a size distribution
	// or a compressibility target sent; nil for one size of random or
	// file payload.
	Payloads *Payloads `json:"payloads,omitempty"`
}

// Payloads is what was measured of a run's payload pool.
type Payloads struct {
	// Count is the number of distinct payloads; MinBytes, MeanBytes and
	// MaxBytes their sizes, header included.
	Count     int     `json:"count"`
	MinBytes  int     `json:"minBytes"`
	MeanBytes float64 `json:"meanBytes"`
	MaxBytes  int     `json:"maxBytes"`
	// Codec and CompressionRatio: the compressed size over the original
	// size of the pool, measured in producer-sized batches with the codec
	// the workload's compressibility names (empty: none asked).
	Codec            string  `json:"codec,omitempty"`
	CompressionRatio float64 `json:"compressionRatio,omitempty"`
}

// Distribution describes a run spread over workers.
type Distribution struct {
	// Placement is how producers and consumers were spread ("spread",
	// "by-topic").
	Placement string `json:"placement"`
	// StartSpreadMs is the largest minus the smallest moment at which a
	// worker's run started, on the coordinator's clock; each moment is
	// known to within its worker's ClockErrorMs.
	StartSpreadMs float64 `json:"startSpreadMs"`
	// EndToEndClockErrorMs bounds the error that clock offsets add to an
	// end-to-end latency: the largest sum of two workers' clock errors
	// where one consumes what the other sends; 0 when every message is
	// consumed on the worker that sent it.
	EndToEndClockErrorMs float64  `json:"endToEndClockErrorMs"`
	Workers              []Worker `json:"workers"`
}

// Worker is one worker of a distributed run and what it measured.
type Worker struct {
	Address   string `json:"address"`
	Hostname  string `json:"hostname,omitempty"`
	Producers int    `json:"producers"`
	Consumers int    `json:"consumers"`
	// ClockOffsetMs is the worker's clock minus the coordinator's;
	// ClockErrorMs bounds its error (half the round trip of the best of
	// several samples), RoundTripMs is that round trip.
	ClockOffsetMs float64 `json:"clockOffsetMs"`
	ClockErrorMs  float64 `json:"clockErrorMs"`
	RoundTripMs   float64 `json:"roundTripMs"`
	// StartLateMs is how long after the barrier's start instant the
	// worker's run started.
	StartLateMs float64 `json:"startLateMs"`
	// Measured is the worker's own measurement phase; System its
	// machine's mean resource use.
	Measured Traffic `json:"measured"`
	System   *System `json:"system,omitempty"`
	// Intervals is how many intervals the worker sent.
	Intervals int `json:"intervals"`
	// Error says why the worker failed or was lost, if it did; what it
	// sent before then is merged.
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// FaultEvent is one fault as it happened.
type FaultEvent struct {
	// AtSeconds is when it fired, on the intervals' time axis.
	AtSeconds float64 `json:"at"`
	// Action is the fault as scheduled ("kill leader"), Target what it
	// acted on ("node 2, the leader of ... partition 0").
	Action string `json:"action"`
	Target string `json:"target,omitempty"`
	// TookSeconds is how long the action took (a kill waits for the
	// process to be gone).
	TookSeconds float64 `json:"tookSeconds"`
	// Error says why the action failed; empty if it succeeded.
	Error    string    `json:"error,omitempty"`
	Recovery *Recovery `json:"recovery,omitempty"`
}

// Recovery is what a fault cost, read from the intervals around it, to the
// resolution of one interval.
type Recovery struct {
	// RateBefore is the mean publish rate of up to five measured intervals
	// before the run's first fault; LowestRate the lowest interval rate
	// after this one.
	RateBefore float64 `json:"rateBefore"`
	LowestRate float64 `json:"lowestRate"`
	// RecoverySeconds runs from the fault to the end of the first interval
	// after it whose publish rate is back above 90% of RateBefore; nil if
	// it never came back within the run.
	RecoverySeconds *float64 `json:"recoverySeconds"`
	// MaxPublishLatencyMs is the largest publish latency from the fault
	// until the recovery (or the end).
	MaxPublishLatencyMs float64 `json:"maxPublishLatencyMs"`
	// UnavailableSeconds is the longest stretch in which no producer
	// received an acknowledgement while messages were in flight, among
	// those under way between the fault and the recovery (10 ms
	// resolution; stretches under 100 ms are not counted).
	UnavailableSeconds float64 `json:"unavailableSeconds"`
}

// Environment records where and with what a run was made.
type Environment struct {
	BrokerbenchVersion string `json:"brokerbenchVersion"`
	BrokerbenchCommit  string `json:"brokerbenchCommit"`
	GoVersion          string `json:"goVersion"`
	Hostname           string `json:"hostname"`
	OS                 string `json:"os"`
	Kernel             string `json:"kernel"`
	Arch               string `json:"arch"`
	CPUModel           string `json:"cpuModel"`
	CPUCores           int    `json:"cpuCores"`
	MemoryBytes        int64  `json:"memoryBytes"`
	BrokerVersion      string `json:"brokerVersion"`
	BrokerEndpoint     string `json:"brokerEndpoint,omitempty"`
	// Network is how the local cluster's links were shaped for the run
	// (they passed through brokerbench's link proxy); nil when they were
	// not proxied.
	Network *workload.Network `json:"network,omitempty"`
	// LocalCluster describes the cluster brokerbench ran on this machine
	// for the run, and that its nodes shared this machine; empty for a
	// cluster given by address.
	LocalCluster string `json:"localCluster,omitempty"`
}

// Driver records the driver and its effective settings (secrets redacted).
type Driver struct {
	Name              string                         `json:"name"`
	Source            string                         `json:"source,omitempty"`
	Format            workload.Format                `json:"format"`
	ReplicationFactor int                            `json:"replicationFactor"`
	Effective         map[string]workload.Properties `json:"effective"`
}

// Phase names an interval's place in the run.
type Phase string

// Run phases, in order.
const (
	Warmup  Phase = "warmup"
	Measure Phase = "measure"
	// BacklogBuild and BacklogDrain replace Warmup and Measure in a backlog
	// test: consumers paused while the backlog builds, then resumed.
	BacklogBuild Phase = "backlog-build"
	BacklogDrain Phase = "backlog-drain"
	Drain        Phase = "drain"
)

// Traffic is what happened over a stretch of time: message counts, rates
// per second, and latency summaries of the messages sent (send lag),
// acknowledged (publish) and consumed (end-to-end) in it.
type Traffic struct {
	Sent        int64   `json:"sent"`
	Acked       int64   `json:"acked"`
	Failed      int64   `json:"failed"`
	Consumed    int64   `json:"consumed"`
	PublishRate float64 `json:"publishRate"`
	ConsumeRate float64 `json:"consumeRate"`
	PublishMBps float64 `json:"publishMBps"`
	ConsumeMBps float64 `json:"consumeMBps"`
	// PublishLatency runs from the intended send time to the
	// acknowledgement; ServiceTime from the actual send time (the
	// broker's and client's share, without the time the send was late).
	PublishLatency  metrics.Latency `json:"publishLatency"`
	ServiceTime     metrics.Latency `json:"serviceTime"`
	SendLag         metrics.Latency `json:"sendLag"`
	EndToEndLatency metrics.Latency `json:"endToEndLatency"`
}

// Interval is one sampling interval; its Traffic covers only the interval.
type Interval struct {
	// StartSeconds and EndSeconds are offsets from the start of producing.
	StartSeconds float64 `json:"start"`
	EndSeconds   float64 `json:"end"`
	Phase        Phase   `json:"phase"`
	Backlog      int64   `json:"backlog"`
	// TargetRate is the producers' mean target rate over the interval, in
	// msg/s over all producers, beside the achieved PublishRate: 0 when
	// they send as fast as they can, or no longer send.
	TargetRate float64 `json:"targetRate,omitempty"`
	Traffic
	// System is the machine's and processes' resource use in the
	// interval, when sampled.
	System *System `json:"system,omitempty"`
}

// System is resource use over a stretch of time, from /proc. CPU figures
// of the machine are percentages of all cores; a process's CPU is a
// percentage of one core (200 = two cores busy).
type System struct {
	CPUUser   float64 `json:"cpuUser"`
	CPUSystem float64 `json:"cpuSystem"`
	CPUIowait float64 `json:"cpuIowait"`
	CPUIdle   float64 `json:"cpuIdle"`
	// CPUSteal is the share of all cores a hypervisor gave to other
	// machines (0 where the kernel does not report it).
	CPUSteal float64 `json:"cpuSteal"`
	// Cores is the number of CPUs the machine's figures are shares of.
	Cores         int     `json:"cores,omitempty"`
	DiskReadMBps  float64 `json:"diskReadMBps"`
	DiskWriteMBps float64 `json:"diskWriteMBps"`
	// NetRxMBps and NetTxMBps count every interface, loopback included.
	NetRxMBps   float64 `json:"netRxMBps"`
	NetTxMBps   float64 `json:"netTxMBps"`
	ClientCPU   float64 `json:"clientCpu"`
	ClientRSSMB float64 `json:"clientRssMB"`
	// BrokerSampled says whether broker processes were sampled: the
	// nodes of a local cluster brokerbench runs, or the processes on this
	// machine listening at the loopback addresses the run was given
	// (numbered from 1 in their order). BrokerCPU and BrokerRSSMB sum
	// over its nodes; BrokerNodes has each node's.
	BrokerSampled bool         `json:"brokerSampled"`
	BrokerCPU     float64      `json:"brokerCpu"`
	BrokerRSSMB   float64      `json:"brokerRssMB"`
	BrokerNodes   []NodeSystem `json:"brokerNodes,omitempty"`
	// LinkProxyCPU is the CPU of the process carrying a local cluster's
	// links (percent of one core), when it has them: work the proxies
	// took from the brokers and the load generator.
	LinkProxyCPU float64 `json:"linkProxyCpu,omitempty"`
	// OtherCPU is the CPU every other process used (percent of one core):
	// the machine's busy time minus brokerbench, the sampled broker nodes
	// and the link proxy. Work that disturbed the measurement; with a
	// broker on this machine that brokerbench does not sample (one whose
	// process it may not read), the broker's own.
	OtherCPU float64 `json:"otherCpu"`
	// Broker holds the brokers' own metrics, read from their Prometheus
	// endpoints at the end of the interval, by series (name and labels):
	// counters as rates per second ("..._per_second"), gauges as read,
	// summed over nodes (times and percentiles: the largest node's).
	Broker map[string]float64 `json:"broker,omitempty"`
}

// NodeSystem is one broker node's resource use: CPU as a percentage of one
// core, resident memory.
type NodeSystem struct {
	ID    int     `json:"id"`
	CPU   float64 `json:"cpu"`
	RSSMB float64 `json:"rssMB"`
}

// Aggregate summarises the measurement phase.
type Aggregate struct {
	DurationSeconds float64 `json:"durationSeconds"`
	Traffic
	// System is the mean of the measurement intervals' resource use
	// (memory: the largest), when sampled.
	System *System `json:"system,omitempty"`
	// BrokerWaitShare is the share of the producers' time spent waiting on
	// the broker (0..1): for a free in-flight slot, or for the client to
	// take a message into its full buffer. Near 1, acknowledgements paced
	// the producers (broker-bound); near 0, they were never held back.
	BrokerWaitShare float64 `json:"brokerWaitShare"`
	// LongestBrokerWaitMs is the longest single wait of a producer on the
	// broker in the measurement, a wait still under way at its end
	// included: a broker that stalls shows here even when the stall is a
	// small share of the whole.
	LongestBrokerWaitMs float64 `json:"longestBrokerWaitMs"`
	// LateBehindBrokerShare is the share of the producers' lateness (how
	// far their sends fell behind schedule, beyond 1 ms) that built up
	// while they waited on the broker between two sends (0..1; absent
	// when no send fell that far behind): near 1, the broker's waits made
	// the sends late, even when each wait alone was short.
	LateBehindBrokerShare float64 `json:"lateBehindBrokerShare,omitempty"`
	// SampleDelayMaxMs is the largest delay of a scheduled sample in the
	// measurement phase: a process that cannot sample on time could not
	// send on time either.
	SampleDelayMaxMs float64 `json:"sampleDelayMaxMs"`
	// SchedulingDelay is how late a timer of brokerbench's woke in the
	// measurement (a probe that sleeps 2 ms at a time): the send lag any
	// sender on this machine would have had. Nil when not measured.
	SchedulingDelay *metrics.Latency `json:"schedulingDelay,omitempty"`
	// Outages are the stretches of the run, from the start of the
	// measurement, in which no producer received an acknowledgement
	// while messages were in flight (100 ms or longer), each from the
	// clock time of the last acknowledgement before it to that of the
	// first after it.
	Outages []Outage `json:"outages,omitempty"`
	// BacklogGrowth is how fast the backlog (messages sent and not yet
	// consumed, over every subscription) grew in the measurement, per
	// second, from the first measured interval's end to the last's.
	BacklogGrowth float64 `json:"backlogGrowthPerSecond"`
	// ConsumersBehind says, when the consumers fell behind through the
	// measurement, by how much and what they were doing; empty otherwise.
	ConsumersBehind string `json:"consumersBehind,omitempty"`
	// CommitLatency is how long the transactions committed in the
	// measurement took to commit, once their messages were acknowledged:
	// the broker's commit alone. Nil for a run without transactions.
	CommitLatency *metrics.Latency `json:"commitLatency,omitempty"`
}

// ThroughputBound reports whether m fell short of a target rate in msg/s:
// below 99% of it, unless the producers sent their whole message limit
// (the rate then includes the wait for the last acknowledgements).
func (m *Aggregate) ThroughputBound(rate float64, sentAll bool) bool {
	return m.PublishRate < 0.99*rate && !sentAll
}

// Outage is a stretch in which no producer received an acknowledgement
// while messages were in flight.
type Outage struct {
	// AtSeconds is its start on the intervals' time axis.
	AtSeconds float64 `json:"at"`
	Seconds   float64 `json:"seconds"`
	// InFlight is how many messages awaited an outcome when it ended.
	InFlight int64 `json:"inFlight"`
}

// Counts is the run's message accounting.
type Counts struct {
	Sent         int64            `json:"sent"`
	Acked        int64            `json:"acked"`
	Failed       int64            `json:"failed"`
	FailedByKind map[string]int64 `json:"failedByKind,omitempty"`
	// Consumed counts deliveries over all subscriptions: with two
	// subscriptions every message is consumed twice.
	Consumed int64 `json:"consumed"`
	// Foreign counts consumed values without a brokerbench header.
	Foreign int64 `json:"foreign"`
	// Unacked counts messages whose outcome was unknown when the run ended.
	Unacked int64 `json:"unacked"`
	// Lost counts acknowledged messages that a subscription never received
	// although it consumed everything the broker stored, and that a read
	// of the broker after the drain proved gone (see Reread), summed over
	// subscriptions.
	Lost int64 `json:"lost"`
	// UnconfirmedLoss counts acknowledged messages that a subscription
	// never received although it consumed everything the broker stored,
	// but that could not be proven gone: the driver cannot read the
	// broker again, or the read failed or did not finish.
	UnconfirmedLoss int64 `json:"unconfirmedLoss"`
	// DeliveredLate counts acknowledged messages that a subscription's
	// consumers had not received after the drain, but that a read of the
	// broker found still there: delivered late, not lost.
	DeliveredLate int64 `json:"deliveredLate,omitempty"`
	// Undelivered counts acknowledged messages not yet received when the
	// run ended without the consumers catching up (interrupted, or the
	// drain timed out): they may still be in the broker.
	Undelivered int64 `json:"undelivered"`
	// Duplicated counts deliveries of a message the same subscription had
	// already received, summed over subscriptions.
	Duplicated int64 `json:"duplicated"`
	// OutOfOrder counts first deliveries that arrived after a later message
	// of the same producer on the same partition.
	OutOfOrder int64 `json:"outOfOrder"`
	// FailedDelivered counts messages the producer saw fail that were
	// delivered all the same (e.g. a timeout after the broker wrote them).
	FailedDelivered int64 `json:"failedDelivered"`
	// Unexpected counts deliveries with a brokerbench header that no
	// producer of this run sent.
	Unexpected int64 `json:"unexpected"`
	// Subscriptions breaks the delivery accounting down by subscription.
	Subscriptions []SubscriptionCounts `json:"subscriptions,omitempty"`
	// StoredByBroker is the broker's own count of messages in the run's
	// topics (Kafka: the sum of end offsets), when the driver can tell.
	StoredByBroker *int64 `json:"storedByBroker,omitempty"`
	// LatencyClamped counts latencies above the histogram range (1 h).
	LatencyClamped int64 `json:"latencyClamped,omitempty"`
	// Transactions counts the transactions of a run whose producers
	// send in them; nil otherwise.
	Transactions *TransactionCounts `json:"transactions,omitempty"`
	// AbortedRead counts messages of aborted transactions that a
	// subscription received, summed over subscriptions: consumers that
	// read only committed messages must receive none.
	AbortedRead int64 `json:"abortedRead,omitempty"`
}

// TransactionCounts counts a run's transactions, over the whole run.
type TransactionCounts struct {
	Committed int64 `json:"committed"`
	Aborted   int64 `json:"aborted"`
	// Undecided counts transactions whose end failed: whether they
	// committed is unknown, and their messages are neither expected
	// nor forbidden.
	Undecided int64 `json:"undecided"`
	// AbortedMessages counts the messages sent in aborted transactions.
	AbortedMessages int64 `json:"abortedMessages"`
}

// AbortRate is the share of ended transactions that were aborted; 0
// when none ended.
func (t *TransactionCounts) AbortRate() float64 {
	n := t.Committed + t.Aborted + t.Undecided
	if n == 0 {
		return 0
	}
	return float64(t.Aborted) / float64(n)
}

// SubscriptionCounts is one subscription's delivery accounting.
type SubscriptionCounts struct {
	Name string `json:"name"`
	// Expected is the number of acknowledged messages for its topic.
	Expected int64 `json:"expected"`
	// Delivered counts distinct messages received.
	Delivered       int64 `json:"delivered"`
	Lost            int64 `json:"lost"`
	UnconfirmedLoss int64 `json:"unconfirmedLoss,omitempty"`
	DeliveredLate   int64 `json:"deliveredLate,omitempty"`
	Undelivered     int64 `json:"undelivered"`
	Duplicated      int64 `json:"duplicated"`
	FailedDelivered int64 `json:"failedDelivered"`
	Unexpected      int64 `json:"unexpected"`
	AbortedRead     int64 `json:"abortedRead,omitempty"`
	// Reread is the evidence for the messages the subscription missed
	// after a complete drain; nil when it missed none.
	Reread *Reread `json:"reread,omitempty"`
}

// Reread is what a read of the broker after the drain found for one
// subscription's missing messages.
type Reread struct {
	// Missing counts the acknowledged messages the subscription had not
	// received when the drain ended.
	Missing int64 `json:"missing"`
	// Read counts the messages the re-read read from the broker.
	Read int64 `json:"read"`
	// Found counts the missing messages the re-read found in the
	// broker: delivered late, not lost.
	Found int64 `json:"found"`
	// Complete says the re-read read everything the broker held for the
	// subscription (or found every missing message): what it did not find
	// is lost, proven. Otherwise it is an unconfirmed loss.
	Complete bool `json:"complete"`
	// Error says why the re-read is not complete: the driver cannot
	// re-read, or the read failed or ran out of time.
	Error string `json:"error,omitempty"`
}

// StudyRun places a run in a study.
type StudyRun struct {
	Name      string  `json:"name"`
	Key       string  `json:"key"`
	Workload  string  `json:"workload"`
	Setup     string  `json:"setup"`
	Brokers   int     `json:"brokers"`
	Params    []Param `json:"params,omitempty"`
	Iteration int     `json:"iteration"`
}

// Price is the cost of the system under test.
type Price struct {
	PerNodeHour float64 `json:"perNodeHour"`
	Nodes       int     `json:"nodes"`
	Currency    string  `json:"currency,omitempty"`
}

// PerHour is the cost of all nodes for an hour.
func (p *Price) PerHour() float64 { return p.PerNodeHour * float64(p.Nodes) }

// PerBillion is the cost of a billion messages at rate msg/s: cost per
// hour / messages per hour x 1e9.
func (p *Price) PerBillion(rate float64) float64 { return p.PerHour() / (rate * 3600) * 1e9 }

// Param is one swept parameter's value in a run.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// BacklogTest is the outcome of a backlog test: the consumers were paused
// until each subscription's backlog reached the target, then resumed until
// it drained.
type BacklogTest struct {
	// TargetMessages is the backlog per subscription to build
	// (consumerBacklogSizeGB in messages, GB = 2^30 bytes).
	TargetMessages int64 `json:"targetMessages"`
	// DrainedAtMessages is the backlog per subscription at which the drain
	// counts as complete.
	DrainedAtMessages int64 `json:"drainedAtMessages"`
	// PeakMessages is the backlog per subscription when consumers resumed.
	PeakMessages int64   `json:"peakMessages"`
	BuildSeconds float64 `json:"buildSeconds"`
	// Built is false if the target was not reached (timeout, or producers
	// reached their message limit first).
	Built        bool    `json:"built"`
	DrainSeconds float64 `json:"drainSeconds"`
	Drained      bool    `json:"drained"`
	// DrainRate and DrainMBps are consumption over the drain, all
	// subscriptions together.
	DrainRate float64 `json:"drainRate"`
	DrainMBps float64 `json:"drainMBps"`
}

// MaxRateSearch is a max sustainable rate search: its objectives, the
// measured rate-versus-latency curve, and the highest rate held.
type MaxRateSearch struct {
	// SLO lists the latency objectives every accepted step met.
	SLO []string `json:"slo"`
	// Ceiling is the publish rate of the unthrottled probe run.
	Ceiling float64 `json:"ceiling"`
	// Rate is the highest target rate of a held step; 0 if none held.
	Rate float64 `json:"rate"`
	// Steps are the runs in the order made.
	Steps []RateStep `json:"steps"`
	// NotMeasurable says why the search could not find the broker's
	// rate (a machine disturbed by other processes, step after step, even
	// after waiting for quiet); empty when it could.
	NotMeasurable string `json:"notMeasurable,omitempty"`
	// Repeatability says how often the found rate, and the failed rate
	// above it, held when run again; nil when no rate held.
	Repeatability *Repeatability `json:"repeatability,omitempty"`
}

// Repeatability counts how often a search's answer held when run again.
// The counts include the search's own step.
type Repeatability struct {
	Rate float64 `json:"rate"`
	Held int     `json:"held"`
	Runs int     `json:"runs"`
	// Above is the lowest failed rate of the search (0 if none failed).
	Above     float64 `json:"above,omitempty"`
	AboveHeld int     `json:"aboveHeld"`
	AboveRuns int     `json:"aboveRuns"`
}

// StepKind says what a search step was for.
type StepKind string

// Step kinds.
const (
	StepWarmup StepKind = "warm-up" // unthrottled, not judged, warms the broker
	StepProbe  StepKind = "probe"   // unthrottled, finds the ceiling
	StepSearch StepKind = "search"  // a fixed rate of the ramp or bisection
	StepRamp   StepKind = "ramp"    // a rising rate, finds the knee; its target is the knee's rate
	StepRepeat StepKind = "repeat"  // the found rate or the one above, again
)

// RateStep is one run of a max-rate search.
type RateStep struct {
	RunID string   `json:"runId"`
	Kind  StepKind `json:"kind"`
	// TargetRate is 0 for the unthrottled probe.
	TargetRate   float64 `json:"targetRate"`
	AchievedRate float64 `json:"achievedRate"`
	ConsumeRate  float64 `json:"consumeRate"`
	// Backlog is the consumers' backlog at the end of the measurement.
	Backlog         int64           `json:"backlog"`
	PublishLatency  metrics.Latency `json:"publishLatency"`
	EndToEndLatency metrics.Latency `json:"endToEndLatency"`
	SendLagP99      float64         `json:"sendLagP99"`
	// Disturbed is true when other processes disturbed the step's
	// machine (see Disturbance); a failed disturbed step is not the
	// broker's failure and is made again when the machine is quiet.
	Disturbed bool   `json:"disturbed,omitempty"`
	Held      bool   `json:"held"`
	Reason    string `json:"reason,omitempty"`
}

// Target states whether a fixed-rate run held its target rate.
type Target struct {
	Rate         float64 `json:"rate"`
	AchievedRate float64 `json:"achievedRate"`
	Held         bool    `json:"held"`
	Reason       string  `json:"reason,omitempty"`
	// ThroughputBound is true when the run fell short of the rate: it then
	// measured a throughput ceiling, and latency from the intended send
	// time mostly measures how far the sends fell behind the schedule;
	// the service time is the broker's latency at that ceiling.
	ThroughputBound bool `json:"throughputBound,omitempty"`
	// Limit says what bounded the throughput (the broker or the load
	// generator), when ThroughputBound.
	Limit string `json:"limit,omitempty"`
	// LoadGeneratorBound is true when the target was missed because the
	// load generator could not send on schedule (its CPU saturated, its
	// samples late, or its producers held back by nothing but themselves):
	// the figures then describe this machine, not the broker.
	LoadGeneratorBound bool `json:"loadGeneratorBound,omitempty"`
	// Disturbed is true when the target was missed on a machine that
	// other processes took (see Disturbance).
	Disturbed bool `json:"disturbed,omitempty"`
	// SendLagLimitMs is the send lag p99 the run was judged by: the
	// configured limit, raised to what this machine's scheduler allowed
	// when the limit is the default (see runner.Config.MaxSendLag).
	SendLagLimitMs float64 `json:"sendLagLimitMs,omitempty"`
}

// Histograms holds encoded latency histograms.
type Histograms struct {
	PublishLatency  string `json:"publishLatency"`
	ServiceTime     string `json:"serviceTime"`
	SendLag         string `json:"sendLag"`
	EndToEndLatency string `json:"endToEndLatency"`
	// CommitLatency is the transactions' commit latency; empty for a run
	// without transactions.
	CommitLatency string `json:"commitLatency,omitempty"`
}

// Write writes r as indented JSON to path, creating directories as needed.
func Write(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create results directory: %w", err)
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	tmp := path + ".tmp"
	// Secrets never reach a file, whatever field carried them.
	if err := os.WriteFile(tmp, append(secret.RedactBytes(data), '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return os.Rename(tmp, path)
}

// FileName turns s (a workload name, a run key) into a file-name fragment:
// letters, digits and - _ . = are kept, anything else becomes '-'; an empty
// s gives "run".
func FileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == '=':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Read loads a results file, or the journal of a run that did not finish
// (a path ending in JournalSuffix) as a partial result.
func Read(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if IsJournal(path) {
		r, _, err := ReadJournal(path, data)
		return r, err
	}
	return Decode(path, data)
}

// Decode parses a results file's content; name is used in errors. It
// rejects content a report could not show (no workload, no schema).
func Decode(name string, data []byte) (*Run, error) {
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a brokerbench results file: %w", name, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, this build reads %q", name, r.Schema, Schema)
	}
	if r.Workload == nil {
		return nil, fmt.Errorf("%s: results without a workload: the file is incomplete; rerun, or read the run's journal (the results path + %q) instead", name, JournalSuffix)
	}
	if r.IntervalSeconds < 0 || r.Workload.MessageSize < 0 || r.Workload.Topics < 0 {
		return nil, fmt.Errorf("%s: results with negative sizes: the file was not written by brokerbench", name)
	}
	return &r, nil
}

// MeanSystem averages the measurement intervals' resource use; memory is
// the largest seen. Nil if none was sampled.
func MeanSystem(intervals []Interval) *System {
	var sum System
	n := 0
	broker, brokerN := map[string]float64{}, map[string]int{}
	for _, iv := range intervals {
		s := iv.System
		if s == nil || (iv.Phase != Measure && iv.Phase != BacklogDrain) {
			continue
		}
		n++
		sum.CPUUser += s.CPUUser
		sum.CPUSystem += s.CPUSystem
		sum.CPUIowait += s.CPUIowait
		sum.CPUIdle += s.CPUIdle
		sum.DiskReadMBps += s.DiskReadMBps
		sum.DiskWriteMBps += s.DiskWriteMBps
		sum.NetRxMBps += s.NetRxMBps
		sum.NetTxMBps += s.NetTxMBps
		sum.ClientCPU += s.ClientCPU
		sum.BrokerCPU += s.BrokerCPU
		sum.LinkProxyCPU += s.LinkProxyCPU
		sum.OtherCPU += s.OtherCPU
		sum.CPUSteal += s.CPUSteal
		sum.Cores = max(sum.Cores, s.Cores)
		sum.ClientRSSMB = max(sum.ClientRSSMB, s.ClientRSSMB)
		sum.BrokerRSSMB = max(sum.BrokerRSSMB, s.BrokerRSSMB)
		sum.BrokerSampled = sum.BrokerSampled || s.BrokerSampled
		for k, v := range s.Broker {
			broker[k] += v
			brokerN[k]++
		}
	}
	if n == 0 {
		return nil
	}
	for k := range broker {
		broker[k] /= float64(brokerN[k])
	}
	if len(broker) == 0 {
		broker = nil
	}
	f := float64(n)
	return &System{Broker: broker,
		CPUUser: sum.CPUUser / f, CPUSystem: sum.CPUSystem / f, CPUIowait: sum.CPUIowait / f, CPUIdle: sum.CPUIdle / f,
		DiskReadMBps: sum.DiskReadMBps / f, DiskWriteMBps: sum.DiskWriteMBps / f, NetRxMBps: sum.NetRxMBps / f, NetTxMBps: sum.NetTxMBps / f,
		ClientCPU: sum.ClientCPU / f, ClientRSSMB: sum.ClientRSSMB, BrokerCPU: sum.BrokerCPU / f, BrokerRSSMB: sum.BrokerRSSMB,
		BrokerSampled: sum.BrokerSampled, LinkProxyCPU: sum.LinkProxyCPU / f,
		OtherCPU: sum.OtherCPU / f, CPUSteal: sum.CPUSteal / f, Cores: sum.Cores,
	}
}
