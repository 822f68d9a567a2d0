package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/sysmetrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// target is where runs go: the broker addresses given with --broker, the
// driver config's own bootstrap servers, or else a local Kafka cluster,
// started on first use with the size asked for, and replaced when another
// size is asked for.
type target struct {
	io        IO
	endpoints []string
	local     localFlags
	// cluster is the local cluster in use; started says this process
	// started it.
	cluster *local.Cluster
	started bool
	status  local.Status
	// fresh: the cluster was just started and has not been warmed up.
	fresh bool
	// network shapes the local cluster's links; nil: none.
	network *workload.Network
	// metricsURLs are the brokers' Prometheus endpoints given on the
	// command line (--broker-metrics); none: the local nodes'.
	metricsURLs []string
	// connected are the options of the last driver connect made.
	connected driver.Options
}

// takeFresh reports whether the local cluster was just started, once.
func (t *target) takeFresh() bool {
	f := t.fresh
	t.fresh = false
	return f
}

// checkMetricsURLs checks the brokers' metrics endpoints given with
// --broker-metrics.
func checkMetricsURLs(urls []string) error {
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "redis") || p.Host == "" {
			return usageError{fmt.Errorf("--broker-metrics: %q is neither a Prometheus endpoint (http://10.0.0.5:7071/metrics), a NATS monitoring endpoint (http://10.0.0.5:8222/varz) nor a Redis server (redis://10.0.0.5:6379)", u)}
		}
	}
	return nil
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

// wantCluster sets the local cluster the next runs of w go to: its number
// of brokers, and its network. Its links pass through the link proxy when
// network is set or w has link faults.
func (t *target) wantCluster(brokers int, network *workload.Network, w *workload.Workload) {
	t.local.brokers = max(1, brokers)
	t.network = network
	t.local.links = network != nil || w.NeedsLinks()
}

// driverOptions returns the endpoints a driver for dc should use (none:
// the driver uses its config's own) and how to resolve the names they
// advertise. On the local target it starts the local cluster, or replaces
// the running one if its size or links differ, and shapes its network.
func (t *target) driverOptions(ctx context.Context, dc *workload.DriverConfig) (driver.Options, error) {
	if !t.usesLocal(dc) {
		return driver.Options{Endpoints: t.endpoints}, nil
	}
	reg, _ := driver.Lookup(dc.Name)
	listener := ""
	if reg.LocalListener != nil {
		listener = reg.LocalListener(dc)
	}
	if t.cluster == nil || t.cluster.Kind.Name() != t.localKind(dc) || t.cluster.Brokers != t.local.brokers || t.cluster.Links != t.local.links ||
		len(t.status.Endpoints(listener)) == 0 {
		if err := t.startCluster(ctx, dc, listener); err != nil {
			return driver.Options{}, err
		}
	}
	if err := t.shapeNetwork(); err != nil {
		return driver.Options{}, withCode(ExitRunFailed, err)
	}
	endpoints := t.status.Endpoints(listener)
	if len(endpoints) == 0 {
		return driver.Options{}, withCode(ExitInvalidInput, fmt.Errorf("the local %s cluster has no %q listener, which %s needs", t.cluster.Kind.Name(), listener, dc.Source))
	}
	opts := driver.Options{Endpoints: endpoints, Hosts: t.status.ClientHosts}
	if sec := t.status.Security; sec != nil {
		pw, err := sec.Password()
		if err != nil {
			return driver.Options{}, withCode(ExitRunFailed, err)
		}
		opts.Credentials = &driver.Credentials{CAFile: sec.CAFile, CertFile: sec.ClientKeyStore, KeyFile: sec.ClientKeyStore, Username: sec.Username, Password: pw}
	}
	return opts, nil
}

// plainListener reports whether dc reaches the local cluster on its plain
// listener, where clients need no credentials.
func (t *target) plainListener(dc *workload.DriverConfig) bool {
	reg, _ := driver.Lookup(dc.Name)
	listener := ""
	if reg.LocalListener != nil {
		listener = reg.LocalListener(dc)
	}
	if listener == "" || listener == "client" || t.cluster == nil {
		return true
	}
	s, ok := t.cluster.Kind.(local.Securer)
	return !ok || s.Listeners()[0] == listener
}

// startCluster starts the local cluster for dc, serving listener, or
// replaces the running one if its size, links or listeners differ.
func (t *target) startCluster(ctx context.Context, dc *workload.DriverConfig, listener string) error {
	if err := t.release(); err != nil {
		return withCode(ExitRunFailed, err)
	}
	t.local.kind = t.localKind(dc)
	c, err := t.local.cluster(t.io)
	if err != nil {
		return withCode(ExitInvalidInput, err)
	}
	c.Serve(listener)
	before := c.Status()
	st, err := c.Up(ctx)
	if err != nil {
		code := ExitRunFailed
		if ctx.Err() != nil {
			code = ExitInterrupted
		}
		return withCode(code, fmt.Errorf("start the local %s cluster: %w%s", c.Kind.Name(), err, t.local.portAdvice(err)))
	}
	reused := before.Running && samePIDs(before, st)
	t.cluster, t.status, t.started, t.fresh = c, st, !reused, !reused
	fmt.Fprintf(t.io.Err, "using local %s %s: %s (stop it with 'brokerbench local down%s')\n",
		c.Kind.Product(), st.Version, t.describeLocal(), t.local.downFlags())
	return nil
}

// samePIDs reports whether the nodes of a and b are the same processes.
func samePIDs(a, b local.Status) bool {
	if len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		if a.Nodes[i].PID != b.Nodes[i].PID {
			return false
		}
	}
	return true
}

// shapeNetwork gives the local cluster's links the network the runs ask
// for (t.network), replacing the previous one.
func (t *target) shapeNetwork() error {
	if !t.cluster.Links {
		return nil
	}
	nw := t.network
	if nw == nil {
		nw = &workload.Network{Zones: 1}
	}
	zone := t.cluster.Zones(nw.Zones)
	crosses := func(l local.Link) bool { return zone[l.From] != zone[l.To] }
	n, err := t.cluster.ShapeLinks("network", crosses, local.LinkShape{Delay: nw.Delay, Jitter: nw.Jitter})
	if err != nil {
		return fmt.Errorf("shape the local cluster's network (%s): %w", nw, err)
	}
	if nw.Delay > 0 {
		fmt.Fprintf(t.io.Err, "network: %s (%d links between zones shaped)\n", nw, n)
	}
	return nil
}

// describeLocal says what the local cluster is and that it shares the
// machine.
func (t *target) describeLocal() string {
	n := t.cluster.Brokers
	links := ""
	if t.cluster.Links {
		links = ", every link through brokerbench's link proxy"
		if nw := t.network; nw != nil && nw.Delay > 0 {
			links += " (" + nw.String() + ")"
		}
	}
	if sec := t.status.Security; sec != nil {
		links += fmt.Sprintf(", serving %s (credentials in %s)", strings.Join(t.status.Listeners, ", "), sec.Dir)
	}
	if n == 1 {
		return fmt.Sprintf("one broker on %s%s, sharing this machine's cores and disk with the load generator", t.status.Address(), links)
	}
	return fmt.Sprintf("%d brokers on %s%s, sharing this machine's cores and disk with each other and with the load generator",
		n, strings.Join(t.status.Bootstrap, ","), links)
}

// faultsFor returns w's fault schedule as faults on the local cluster,
// which drv is connected to.
func (t *target) faultsFor(w *workload.Workload, drv driver.Driver) ([]faults.Scheduled, error) {
	if len(w.Faults) == 0 {
		return nil, nil
	}
	if t.cluster == nil {
		return nil, withCode(ExitInvalidInput, fmt.Errorf("%s: the workload has a fault schedule; faults act on the local clusters brokerbench starts, and this run goes to %s: leave out --broker",
			w.Source, strings.Join(t.endpoints, ",")))
	}
	place, _ := drv.(driver.Placement)
	sched, err := t.cluster.Faults(w.Faults, place, w.Seed)
	if err != nil {
		return nil, withCode(ExitInvalidInput, fmt.Errorf("%s: %w (the local cluster has %d brokers)", w.Source, err, t.cluster.Brokers))
	}
	return sched, nil
}

// heal brings the local cluster back after a run with faults: killed nodes
// restarted, paused ones resumed.
func (t *target) heal(ctx context.Context) {
	if t.cluster == nil {
		return
	}
	// Restarted nodes are cold: the next run warms the cluster up again.
	t.fresh = true
	if err := t.cluster.Heal(ctx); err != nil {
		fmt.Fprintf(t.io.Err, "warning: the local cluster did not recover from the run's faults: %v; restart it with 'brokerbench local down%s' and 'local up'\n", err, t.local.downFlags())
	}
}

// release stops the local cluster if this process started it.
func (t *target) release() error {
	if t.cluster == nil || !t.started {
		t.cluster = nil
		return nil
	}
	fmt.Fprintf(t.io.Err, "stopping the local %d-broker %s cluster started for these runs\n", t.cluster.Brokers, t.cluster.Kind.Product())
	err := t.cluster.Down()
	t.cluster = nil
	return err
}

// usesLocal reports whether a driver for dc runs against the local broker:
// no address given on the command line and none in any section of its
// config.
func (t *target) usesLocal(dc *workload.DriverConfig) bool {
	if len(t.endpoints) > 0 || t.localKind(dc) == "" {
		return false
	}
	reg, _ := driver.Lookup(dc.Name)
	// Files made for Kafka's own tools give the addresses in producer
	// and consumer properties alone.
	for _, section := range []workload.Properties{dc.Common, dc.Producer, dc.Consumer} {
		if _, configured := section.Get(reg.EndpointSetting); configured {
			return false
		}
	}
	return true
}

// localKind is the kind of local broker that dc's driver runs against
// ("" if brokerbench runs none for it).
func (t *target) localKind(dc *workload.DriverConfig) string {
	reg, _ := driver.Lookup(dc.Name)
	return reg.LocalKind
}

// plannedOptions returns the options a driver for dc would get, without
// starting or contacting anything: for validating settings ahead of a run.
// A local cluster's credentials are made when it starts, so they stand in
// as a user without a certificate authority.
func (t *target) plannedOptions(dc *workload.DriverConfig) driver.Options {
	if !t.usesLocal(dc) {
		return driver.Options{Endpoints: t.endpoints}
	}
	port := t.local.port
	if port == 0 {
		port = local.DefaultPort(t.localKind(dc))
	}
	return driver.Options{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", port)},
		Credentials: &driver.Credentials{Username: local.Username, Password: "made when the cluster starts"}}
}

// connectTimeout bounds the first request to a broker.
const connectTimeout = 15 * time.Second

// connect creates the driver for dc on the target and records the
// environment, broker version included.
func (t *target) connect(ctx context.Context, dc *workload.DriverConfig) (driver.Driver, results.Environment, error) {
	env := sysinfo.Collect()
	opts, err := t.driverOptions(ctx, dc)
	if err != nil {
		return nil, env, err
	}
	endpoints := opts.Endpoints
	t.connected = opts
	drv, err := driver.New(dc, opts)
	if err != nil {
		if errors.Is(err, driver.ErrUnknownDriver) {
			return nil, env, withCode(ExitInvalidInput, err)
		}
		return nil, env, err
	}
	where := driver.RedactEndpoints(strings.Join(endpoints, ","))
	if where == "" {
		where = "the addresses in " + dc.Source
	}
	fmt.Fprintf(t.io.Err, "connecting to %s at %s (waiting up to %s for an answer)\n", dc.Name, where, connectTimeout)
	vctx, cancel := context.WithTimeout(ctx, connectTimeout)
	env.BrokerVersion, err = drv.BrokerVersion(vctx)
	timedOut := vctx.Err() != nil
	cancel()
	if err != nil {
		drv.Close()
		if errors.Is(err, driver.ErrRefused) {
			return nil, env, withCode(ExitRunFailed, err)
		}
		if ctx.Err() == nil && timedOut {
			err = fmt.Errorf("no answer from %s at %s within %s: %w", dc.Name, where, connectTimeout, err)
		}
		if reg, ok := driver.Lookup(dc.Name); ok && reg.LocalKind != "" && !t.usesLocal(dc) {
			err = fmt.Errorf("%w\n(for a broker on this machine: 'brokerbench local up %s' starts one, or leave the addresses out of the driver config and run starts it)", err, reg.LocalKind)
		}
		return nil, env, withCode(ExitRunFailed, err)
	}
	if t.usesLocal(dc) && t.cluster != nil {
		// The driver can only guess a version from the protocol (4.3 for
		// 4.3.1); the local broker's is known exactly.
		env.BrokerVersion = t.cluster.Kind.Product() + " " + t.status.Version
		env.LocalCluster = t.describeLocal()
		if t.cluster.Links {
			nw := workload.Network{Zones: 1}
			if t.network != nil {
				nw = *t.network
			}
			env.Network = &nw
		}
	} else if v := localVersionAt(dc, endpoints, localStatus); v != "" {
		env.BrokerVersion = v
	}
	env.BrokerEndpoint = driver.RedactEndpoints(strings.Join(endpoints, ","))
	return drv, env, nil
}

// brokers is the size of the target cluster: for the local target, the
// most brokers a local cluster may have; else what the driver for dc reads
// from the cluster (1 if it cannot tell).
func (t *target) brokers(ctx context.Context, dc *workload.DriverConfig) (int, error) {
	if t.usesLocal(dc) {
		return maxLocalBrokers, nil
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

// systemSampler samples this machine, every node's process when the
// target is a local cluster, and the brokers' metrics endpoints: the local
// nodes' "metrics" listeners, or those given with --broker-metrics. It
// reads the nodes' PIDs now: a node restarted by a fault is sampled again
// under its new PID only by the next run.
func (t *target) systemSampler() func() *results.System {
	var nodes []sysmetrics.Node
	var endpoints []brokermetrics.Target
	for i, u := range t.metricsURLs {
		endpoints = append(endpoints, brokermetrics.Target{Node: i + 1, URL: u})
	}
	if t.cluster != nil {
		st := t.cluster.Status()
		for _, n := range st.Nodes {
			if n.Running {
				nodes = append(nodes, sysmetrics.Node{ID: n.ID, PID: n.PID})
			}
			if n.MetricsURL != "" && len(t.metricsURLs) == 0 {
				endpoints = append(endpoints, brokermetrics.Target{Node: n.ID, URL: n.MetricsURL})
			}
		}
		if p := st.LinkProxy; p != nil && p.Running {
			nodes = append(nodes, sysmetrics.Node{PID: p.PID, LinkProxy: true})
		}
	}
	sys := sysmetrics.New(nodes)
	if len(endpoints) == 0 {
		return sys.Sample
	}
	scraper := brokermetrics.New(endpoints)
	return func() *results.System {
		s := sys.Sample()
		if s != nil {
			s.Broker = scraper.Sample()
		}
		return s
	}
}

// describe records where and how res was measured.
func describe(res *results.Run, env results.Environment, dc *workload.DriverConfig, drv driver.Driver, w *workload.Workload) {
	res.Environment = env
	res.Driver = results.Driver{Name: dc.Name, Source: dc.Source, Format: dc.Format, ReplicationFactor: dc.ReplicationFactor, Effective: drv.EffectiveConfig()}
	if w.ReplicationFactor > 0 {
		res.Driver.ReplicationFactor = w.ReplicationFactor
	}
}
