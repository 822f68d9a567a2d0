// Package engine makes runs: it owns the one sequence every command that
// measures shares (connect to the target, clean what earlier runs left,
// warm a fresh cluster up, keep the run's journal and topic registry, start
// and heal its faults, hand its intervals and results to the outputs, the
// two-stage interrupt, teardown), the targets runs go to (a local cluster
// it may start, brokers given by address, workers, Kubernetes), and the
// run, study, worker and Kubernetes sequences built on it. It knows
// nothing of flags: its errors carry a Kind the command line maps to an
// exit code.
package engine

import (
	"io"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// IO holds the streams the engine writes to: Out for what a command
// produces (summaries, the paths written), Err for what it says along
// the way (progress, warnings).
type IO struct {
	Out, Err io.Writer
}

// MaxLocalBrokers bounds local clusters: nine 512 MiB brokers fit in 24
// GiB with room for the load generator; the 2 cores are the real limit.
const MaxLocalBrokers = 9

// DefaultDriver is the driver of a workload that names none.
func DefaultDriver() *workload.DriverConfig {
	return &workload.DriverConfig{Name: "kafka", Format: workload.Native, ReplicationFactor: 1, Source: "default Kafka driver"}
}
