// Package omblayout runs brokerbench as an OpenMessaging Benchmark user
// does, for the broker modules' tests: from the root of a tree in OMB's
// layout (workloads/, payload/, driver-NAME/), on OMB's own workload and
// driver files as OMB ships them, against a broker the test started.
//
// The tree is this package's testdata: OMB's
// workloads/1-topic-1-partition-1kb.yaml and payload/payload-1Kb.data,
// and the driver files of the brokers whose OMB drivers brokerbench
// reads (driver-nsq/nsq.yaml, driver-mqtt5/mqtt5.yaml,
// driver-artemis/artemis.yaml, driver-rocketmq5/rocketmq.yaml,
// driver-pulsar/pulsar.yaml and pulsar-effectively-once.yaml,
// driver-nats/nats.yaml, driver-redis/redis.yaml and
// driver-rabbitmq/rabbitmq.yaml).
package omblayout

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/results"
)

// Workload is OMB's workload file the runs use, relative to the tree's
// root: one topic of one partition, 1 KB messages from OMB's payload
// file, one producer and one consumer.
const Workload = "workloads/1-topic-1-partition-1kb.yaml"

// Rate is the rate the runs hold, in place of the workload's 50,000
// msg/s, which is not what a test measures.
const Rate = 500

// Target is the broker a run goes to.
type Target struct {
	// Broker, if set, lists its addresses, comma-separated, in the form
	// the broker's --broker takes; they replace the driver file's, as
	// they do for a user who gives --broker.
	Broker string
	// Else the run uses the running local cluster of Brokers brokers
	// (0: one) on LocalPort whose state is in StateDir, as a user's run
	// given --local-brokers N uses the cluster 'local up' started: its
	// addresses replace the file's, and the run connects with its
	// credentials.
	LocalPort, Brokers int
	StateDir           string
}

// Run runs brokerbench on Workload with driverFile, a path in OMB's
// tree such as "driver-nsq/nsq.yaml", from the tree's root, against
// target. The run has a second of warmup and 3 s of measurement at
// Rate.
//
// It fails t unless the run completes with every acknowledged message
// consumed and none lost: a run that ends with a verdict
// on the rate this machine held (target not held, load-generator-bound,
// disturbed) is accepted, as a busy machine gives them. It returns the
// run's results.
func Run(t *testing.T, driverFile string, target Target) *results.Run {
	t.Helper()
	t.Chdir(Root(t))
	out := filepath.Join(t.TempDir(), "result.json")
	o := engine.DefaultRunOptions()
	o.DriverFile = driverFile
	o.Broker = target.Broker
	if target.Broker == "" {
		o.Local.Port, o.Local.PortGiven, o.Local.StateDir = target.LocalPort, true, target.StateDir
		o.Local.Brokers, o.Local.BrokersGiven = max(target.Brokers, 1), true
	}
	o.Out = out
	o.Progress = false
	o.MaxSendLag = 200 * time.Millisecond
	o.Overrides = []engine.Override{{Name: "rate", Value: fmt.Sprint(Rate)}, {Name: "warmup", Value: "1s"}, {Name: "duration", Value: "3s"}}
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := engine.Run(ctx, engine.IO{Out: &stdout, Err: &stderr}, Workload, o)
	switch engine.KindOf(err) {
	case 0:
	case engine.TargetNotHeld, engine.LoadGeneratorBound, engine.Disturbed:
		t.Logf("a verdict on the rate this machine held, accepted here: %v", err)
	default:
		t.Fatalf("brokerbench run %s --driver %s against %+v: %v\nstdout:\n%s\nstderr:\n%s", Workload, driverFile, target, err, stdout.String(), stderr.String())
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.Acked == 0 || c.Consumed < c.Acked || c.Lost != 0 || c.UnconfirmedLoss != 0 {
		t.Errorf("accounting %+v; want messages acknowledged, each consumed once, none lost\nstdout:\n%s", c, stdout.String())
	}
	return res
}

// Root returns the directory of the tree in OMB's layout.
func Root(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("omblayout: the package's own directory is unknown")
	}
	return filepath.Join(filepath.Dir(file), "testdata")
}
