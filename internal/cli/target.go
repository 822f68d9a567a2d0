package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/sysmetrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// target is where runs go: the broker addresses given with --broker, the
// driver config's own bootstrap servers, or else the local Kafka broker,
// started on first use and left running.
type target struct {
	io           IO
	endpoints    []string
	local        localFlags
	localAddr    string
	localPID     int
	localVersion string
}

func newTarget(io IO, broker string, local localFlags) *target {
	t := &target{io: io, local: local}
	for _, b := range strings.Split(broker, ",") {
		if b = strings.TrimSpace(b); b != "" {
			t.endpoints = append(t.endpoints, b)
		}
	}
	return t
}

// endpointsFor returns the endpoints a driver for dc should use; nil lets
// the driver use its config's own.
func (t *target) endpointsFor(ctx context.Context, dc *workload.DriverConfig) ([]string, error) {
	if !t.usesLocal(dc) {
		return t.endpoints, nil
	}
	if t.localAddr == "" {
		st, err := t.local.kafka(t.io).Up(ctx)
		if err != nil {
			return nil, withCode(ExitRunFailed, fmt.Errorf("start the local Kafka broker: %w%s", err, t.local.portAdvice(err)))
		}
		fmt.Fprintf(t.io.Err, "using local Kafka %s on %s (pid %d; stop it with 'brokerbench local down kafka')\n", st.Version, st.Address(), st.Nodes[0].PID)
		t.localAddr, t.localPID, t.localVersion = st.Address(), st.Nodes[0].PID, st.Version
	}
	return []string{t.localAddr}, nil
}

// usesLocal reports whether a driver for dc runs against the local broker:
// no address given on the command line and none in its config.
func (t *target) usesLocal(dc *workload.DriverConfig) bool {
	if len(t.endpoints) > 0 || dc.Name != "kafka" {
		return false
	}
	_, configured := dc.Common.Get("bootstrap.servers")
	return !configured
}

// plannedEndpoints returns the endpoints a driver for dc would use, without
// starting or contacting anything: for validating settings ahead of a run.
func (t *target) plannedEndpoints(dc *workload.DriverConfig) []string {
	if !t.usesLocal(dc) {
		return t.endpoints
	}
	return []string{fmt.Sprintf("127.0.0.1:%d", t.local.port)}
}

// connectTimeout bounds the first request to a broker.
const connectTimeout = 15 * time.Second

// connect creates the driver for dc on the target and records the
// environment, broker version included.
func (t *target) connect(ctx context.Context, dc *workload.DriverConfig) (driver.Driver, results.Environment, error) {
	env := sysinfo.Collect()
	endpoints, err := t.endpointsFor(ctx, dc)
	if err != nil {
		return nil, env, err
	}
	drv, err := driver.New(dc, driver.Options{Endpoints: endpoints})
	if err != nil {
		if errors.Is(err, driver.ErrUnknownDriver) {
			return nil, env, withCode(ExitInvalidInput, err)
		}
		return nil, env, err
	}
	where := strings.Join(endpoints, ",")
	if where == "" {
		where = "the addresses in " + dc.Source
	}
	fmt.Fprintf(t.io.Err, "connecting to %s at %s (waiting up to %s for an answer)\n", dc.Name, where, connectTimeout)
	vctx, cancel := context.WithTimeout(ctx, connectTimeout)
	env.BrokerVersion, err = drv.BrokerVersion(vctx)
	cancel()
	if err != nil {
		drv.Close()
		if ctx.Err() == nil && vctx.Err() != nil {
			err = fmt.Errorf("no answer from %s at %s within %s: %w", dc.Name, where, connectTimeout, err)
		}
		return nil, env, withCode(ExitRunFailed, err)
	}
	if t.usesLocal(dc) && t.localVersion != "" {
		// The driver can only guess a version from the protocol (4.3 for
		// 4.3.1); the local broker's is known exactly.
		env.BrokerVersion = "Apache Kafka " + t.localVersion
	}
	env.BrokerEndpoint = strings.Join(endpoints, ",")
	return drv, env, nil
}

// brokers is the size of the target cluster: 1 for the local broker, else
// what the driver for dc reads from the cluster (1 if it cannot tell).
func (t *target) brokers(ctx context.Context, dc *workload.DriverConfig) (int, error) {
	if t.usesLocal(dc) {
		return 1, nil
	}
	drv, _, err := t.connect(ctx, dc)
	if err != nil {
		return 0, err
	}
	defer drv.Close()
	cs, ok := drv.(driver.ClusterSizer)
	if !ok {
		return 1, nil
	}
	return cs.Brokers(ctx)
}

// systemSampler samples this machine, and the broker process when it is
// the local broker brokerbench manages.
func (t *target) systemSampler() func() *results.System {
	return sysmetrics.New(t.localPID).Sample
}

// describe records where and how res was measured.
func describe(res *results.Run, env results.Environment, dc *workload.DriverConfig, drv driver.Driver, w *workload.Workload) {
	res.Environment = env
	res.Driver = results.Driver{Name: dc.Name, Source: dc.Source, Format: dc.Format, ReplicationFactor: dc.ReplicationFactor, Effective: drv.EffectiveConfig()}
	if w.ReplicationFactor > 0 {
		res.Driver.ReplicationFactor = w.ReplicationFactor
	}
}
