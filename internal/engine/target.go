package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/localfaults"
	"github.com/brokerbench/brokerbench/internal/proc"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/sysmetrics"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Target is where runs go: the broker addresses given with --broker, the
// driver config's own bootstrap servers, or else a local cluster of the
// driver's broker kind: the one running, used as it is when it fits the
// runs, or else one started for them, of the size they need (see
// chooseLocal), which a run leaves running and a study stops.
type Target struct {
	io        IO
	endpoints []string
	local     LocalOptions
	// cluster is the local cluster in use; started says this process
	// started it (or started again one that was stopped), so that release
	// stops it.
	cluster *local.Cluster
	started bool
	status  local.Status
	// size is the number of brokers of the local cluster the next runs
	// ask for, exactly when exact (--local-brokers, a study setup's
	// brokers); else they need at least the replication factor, rf (0:
	// the driver config's). setup names the study setup asking, whose
	// shape is matched exactly, links included.
	size  int
	exact bool
	rf    int
	setup string
	// version is the broker release the next runs ask for; empty: any
	// release serves a cluster used as it is, and one started runs the
	// kind's own.
	version string
	// fresh: the cluster was just started and has not been warmed up.
	fresh bool
	// network shapes the local cluster's links; nil: none.
	network *workload.Network
	// metricsURLs are the brokers' Prometheus endpoints given on the
	// command line (--broker-metrics); none: the local nodes'.
	metricsURLs []string
	// connected are the options of the last driver connect made.
	connected driver.Options
	// listening are the processes on this machine that listen at the
	// addresses the last connect went to, without a local cluster in use
	// (see brokerProcesses): sampled as the broker's nodes. said is what
	// was last said of them.
	listening []sysmetrics.Node
	said      string
	// healInProcess undoes what faults on an in-process broker left
	// done (nil: nothing to undo).
	healInProcess func()
}

// takeFresh reports whether the local cluster was just started, once.
func (t *Target) takeFresh() bool {
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
			if err == nil {
				u = p.Redacted()
			}
			return badInput(fmt.Errorf("--broker-metrics: %q is neither a Prometheus endpoint (http://10.0.0.5:7071/metrics), a NATS monitoring endpoint (http://10.0.0.5:8222/varz), "+
				"an Artemis console's Jolokia agent (http://USER:PASSWORD@10.0.0.5:8161/console/jolokia) nor a Redis server (redis://10.0.0.5:6379)", u))
		}
	}
	return nil
}

func newTarget(io IO, broker string, local LocalOptions) *Target {
	t := &Target{io: io, local: local}
	for _, b := range strings.Split(broker, ",") {
		if b = strings.TrimSpace(b); b != "" {
			t.endpoints = append(t.endpoints, b)
		}
	}
	return t
}

// wantCluster sets the local cluster the next runs of w go to: its number
// of brokers (0: as many as w's replication factor, at least 1; a running
// cluster with at least that many then serves), and its network. Its
// links pass through the link proxy when network is set or w has link
// faults.
func (t *Target) wantCluster(brokers int, network *workload.Network, w *workload.Workload) {
	t.size, t.exact, t.rf, t.setup, t.version = brokers, brokers > 0, w.ReplicationFactor, "", t.local.Version
	t.network = network
	t.local.Links = network != nil || w.NeedsLinks()
}

// wantSetup sets the local cluster a study's run of w on setup s goes
// to: the setup's shape, exactly.
func (t *Target) wantSetup(s workload.Setup, w *workload.Workload) {
	t.wantCluster(max(1, s.Brokers), s.Network, w)
	t.setup = s.Name
	if s.BrokerVersion != "" {
		t.version = s.BrokerVersion
	}
}

// localNeed is what the next runs need of a local cluster.
type localNeed struct {
	kind string
	// brokers is the number of brokers: exactly that many when exact,
	// else at least; why says who asks ("--local-brokers 3", "the
	// workload's replication factor 3").
	brokers int
	exact   bool
	why     string
	// links: the links must pass through the link proxy (network,
	// link faults); strict: the cluster must be of this shape exactly,
	// links included (a study setup, compared with others).
	links, strict bool
	// listener is the client listener the driver connects to.
	listener string
	// version is the broker release asked for (empty: any); release the
	// one a cluster started for the runs runs (version, else the kind's
	// own).
	version, release string
	// replace: a cluster that does not fit may be replaced, whoever
	// started it (--replace).
	replace bool
	// self is this process's PID.
	self int
}

// versionWhy says who asks for need.version: a study setup, or
// --local-version.
func (n localNeed) versionWhy() string {
	if n.strict {
		return strings.TrimPrefix(n.why, "the ")
	}
	return "--local-version"
}

// need returns what runs of a driver for dc need of the local cluster.
func (t *Target) need(dc *workload.DriverConfig) (localNeed, error) {
	reg, _ := brokers.Lookup(dc.Name)
	n := localNeed{kind: t.localKind(dc), links: t.local.Links, strict: t.setup != "", replace: t.local.Replace, self: os.Getpid(), version: t.version}
	if reg.LocalListener != nil {
		n.listener = reg.LocalListener(dc)
	}
	c, err := brokers.NewLocal(n.kind, 0, 1)
	if err != nil {
		return n, err
	}
	kind, err := local.WithRelease(c.Kind, n.version)
	if err != nil {
		if t.setup != "" {
			err = fmt.Errorf("setup %q: %w", t.setup, err)
		}
		return n, err
	}
	n.release = kind.Version()
	rf := t.rf
	if rf == 0 {
		rf = dc.ReplicationFactor
	}
	switch {
	case t.setup != "":
		n.brokers, n.exact, n.why = t.size, true, fmt.Sprintf("setup %q", t.setup)
	case t.exact:
		n.brokers, n.exact, n.why = t.size, true, fmt.Sprintf("--%s %d", t.local.BrokersFlag, t.size)
		if rf > t.size {
			return n, fmt.Errorf("--%s %d cannot hold the workload's replication factor %d: give at least %d, or leave it out and the run uses (or starts) a cluster of at least %d", t.local.BrokersFlag, t.size, rf, rf, rf)
		}
	default:
		n.brokers, n.why = max(1, rf), fmt.Sprintf("the workload's replication factor %d", max(1, rf))
		if n.brokers > MaxLocalBrokers {
			return n, fmt.Errorf("the workload's replication factor %d needs %d brokers; a local cluster has at most %d: run it against a larger cluster with --broker", rf, rf, MaxLocalBrokers)
		}
	}
	return n, brokers.CheckLocal(dc.Name, n.brokers, n.why, n.links)
}

// checkLocal checks, without starting or stopping anything, that runs of
// a driver for dc can have their local cluster: a study checks every
// planned run before the first, rather than stopping at the first setup
// the running cluster does not fit.
func (t *Target) checkLocal(dc *workload.DriverConfig) error {
	if !t.usesLocal(dc) {
		return nil
	}
	need, err := t.need(dc)
	if err != nil {
		return badInput(err)
	}
	flags := t.local
	flags.Kind, flags.Brokers, flags.Version = need.kind, need.brokers, need.release
	c, err := flags.Cluster(nil)
	if err != nil {
		return badInput(err)
	}
	if _, err := chooseLocal(c.Status(), need); err != nil {
		return badInput(err)
	}
	return nil
}

// fits reports whether the local cluster in use serves runs that need
// need: one this process started must be the shape they need; one it
// uses as it is must fit them.
func (t *Target) fits(need localNeed) bool {
	if t.cluster == nil || t.cluster.Kind.Name() != need.kind {
		return false
	}
	if !t.started {
		return misfit(t.status, need) == ""
	}
	return t.cluster.Brokers == need.brokers && t.cluster.Links == need.links && len(t.status.Endpoints(need.listener)) > 0 &&
		t.status.Version == need.release
}

// driverOptions returns the endpoints a driver for dc should use (none:
// the driver uses its config's own) and how to resolve the names they
// advertise. On the local target it uses the running local cluster if it
// fits, or else starts one (see chooseLocal), and shapes its network.
func (t *Target) driverOptions(ctx context.Context, dc *workload.DriverConfig) (driver.Options, error) {
	if !t.usesLocal(dc) {
		return driver.Options{Endpoints: t.endpoints}, nil
	}
	need, err := t.need(dc)
	if err != nil {
		return driver.Options{}, badInput(err)
	}
	if !t.fits(need) {
		if err := t.startCluster(ctx, need); err != nil {
			return driver.Options{}, err
		}
	}
	if err := t.shapeNetwork(); err != nil {
		return driver.Options{}, failed(err)
	}
	listener := need.listener
	reg, _ := brokers.Lookup(dc.Name)
	endpoints := reg.LocalEndpoints(t.status, listener)
	if len(endpoints) == 0 {
		return driver.Options{}, badInput(fmt.Errorf("the local %s cluster has no %q listener, which %s needs", t.cluster.Kind.Name(), listener, dc.Source))
	}
	opts := driver.Options{Endpoints: endpoints, Hosts: t.status.ClientHosts}
	if sec := t.status.Security; sec != nil {
		pw, err := sec.Password()
		if err != nil {
			return driver.Options{}, failed(err)
		}
		opts.Credentials = &driver.Credentials{CAFile: sec.CAFile, CertFile: sec.ClientKeyStore, KeyFile: sec.ClientKeyStore, Username: sec.Username, Password: pw}
	}
	return opts, nil
}

// needsCredentials reports whether a driver for dc, as the session
// connected it, needs the local cluster's credentials: the cluster is
// secured and the listener dc connects to asks for some of them (see
// local.Securer.OpenListeners).
func (t *Target) needsCredentials(dc *workload.DriverConfig) bool {
	if t.connected.Credentials == nil || t.cluster == nil {
		return false
	}
	reg, _ := brokers.Lookup(dc.Name)
	listener := ""
	if reg.LocalListener != nil {
		listener = reg.LocalListener(dc)
	}
	return t.cluster.AsksForCredentials(listener)
}

// startCluster makes the local cluster that serves runs that need need
// the one in use, after stopping the one this process started, if any:
// the running one, used as it is, or one started for the runs, which
// release stops (see chooseLocal). It says which, in one line.
func (t *Target) startCluster(ctx context.Context, need localNeed) error {
	if err := t.release(); err != nil {
		return failed(err)
	}
	t.local.Kind, t.local.Brokers = need.kind, need.brokers
	opts := t.local
	opts.Version = need.release
	c, err := opts.Cluster(t.io.Err)
	if err != nil {
		return badInput(err)
	}
	clusterErr := func(what string, err error) error {
		kind := RunFailed
		if ctx.Err() != nil {
			kind = Interrupted
		}
		return WithKind(kind, fmt.Errorf("%s the local %s cluster: %w%s", what, c.Kind.Name(), err, t.local.PortAdvice(err)))
	}
	before := c.Status()
	use, err := chooseLocal(before, need)
	if err != nil {
		return badInput(err)
	}
	if use {
		st, err := c.Attach(ctx)
		if err != nil {
			return clusterErr("use", err)
		}
		t.cluster, t.status, t.started, t.fresh = c, st, false, false
		fmt.Fprintf(t.io.Err, "using the running local %s %s as it is (%s; left running): %s\n",
			c.Kind.Product(), st.Version, local.Origin(st.StartedBy, st.RunPID), t.describeLocal())
		return nil
	}
	c.Serve(need.listener)
	c.Replace = need.replace
	st, err := c.Up(ctx)
	if err != nil {
		var re *local.ReplaceError
		if errors.As(err, &re) {
			return badInput(fmt.Errorf("%w: add --replace to have these runs replace it", err))
		}
		return clusterErr("start", err)
	}
	reused := before.Running && samePIDs(before, st)
	t.cluster, t.status, t.started, t.fresh = c, st, true, !reused
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
func (t *Target) shapeNetwork() error {
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
func (t *Target) describeLocal() string {
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

// faultsFor returns w's fault schedule as faults on the local cluster
// drv is connected to, or, for a broker whose module makes its own faults
// (an in-process one, driver config dc), as that module's faults.
func (t *Target) faultsFor(w *workload.Workload, dc *workload.DriverConfig, drv driver.Driver) ([]faults.Scheduled, error) {
	if len(w.Faults) == 0 {
		return nil, nil
	}
	if reg, _ := brokers.Lookup(dc.Name); t.cluster == nil && reg.Faults != nil {
		sched, heal, err := reg.Faults(drv, w.Faults)
		if err != nil {
			return nil, badInput(fmt.Errorf("%s: %w", w.Source, err))
		}
		t.healInProcess = heal
		return sched, nil
	}
	if t.cluster == nil {
		return nil, badInput(fmt.Errorf("%s: the workload has a fault schedule; faults act on the local clusters brokerbench starts, and this run goes to %s: leave out --broker",
			w.Source, strings.Join(t.endpoints, ",")))
	}
	var place localfaults.Finder
	switch p := drv.(type) {
	case driver.Placement:
		place = p
	case driver.HostPlacement:
		place = localfaults.ByHost(t.cluster.Nodes(), p)
	case driver.Unplaced:
		place = localfaults.Unplaced(p.Unplaced())
	}
	sched, err := localfaults.Schedule(t.cluster, w.Faults, place, w.Seed)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %w (the local cluster has %d brokers)", w.Source, err, t.cluster.Brokers))
	}
	return sched, nil
}

// heal brings the local cluster back after a run with faults: killed nodes
// restarted, paused ones resumed.
func (t *Target) heal(ctx context.Context) {
	if t.healInProcess != nil {
		t.healInProcess()
		t.healInProcess = nil
	}
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
func (t *Target) release() error {
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
// no address given on the command line, and either --local-brokers given
// (the local cluster's addresses then replace the config's, as --broker's
// would: OMB's files name localhost, which a cluster's nodes other than
// a single one do not serve) or no address in any section of its config.
func (t *Target) usesLocal(dc *workload.DriverConfig) bool {
	if len(t.endpoints) > 0 || t.localKind(dc) == "" {
		return false
	}
	if t.local.BrokersGiven {
		return true
	}
	reg, _ := brokers.Lookup(dc.Name)
	// Files made for Kafka's own tools give the addresses in producer
	// and consumer properties alone.
	return len(configuredEndpoints(dc, reg.EndpointSettings)) == 0
}

// localKind is the kind of local broker that dc's driver runs against
// ("" if brokerbench runs none for it).
func (t *Target) localKind(dc *workload.DriverConfig) string {
	reg, _ := brokers.Lookup(dc.Name)
	return reg.LocalKind()
}

// plannedOptions returns the options a driver for dc would get, without
// starting or contacting anything: for validating settings ahead of a run.
// A local cluster's credentials are made when it starts, so they stand in
// as a user without a certificate authority.
func (t *Target) plannedOptions(dc *workload.DriverConfig) driver.Options {
	if !t.usesLocal(dc) {
		return driver.Options{Endpoints: t.endpoints}
	}
	port := t.local.Port
	if port == 0 {
		port = brokers.DefaultPort(t.localKind(dc))
	}
	return driver.Options{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", port)},
		Credentials: &driver.Credentials{Username: local.Username, Password: "made when the cluster starts"}}
}

// connectTimeout bounds the first request to a broker.
const connectTimeout = 15 * time.Second

// connect creates the driver for dc on the target and records the
// environment, broker version included.
func (t *Target) connect(ctx context.Context, dc *workload.DriverConfig) (driver.Driver, results.Environment, error) {
	env := sysinfo.Collect()
	opts, err := t.driverOptions(ctx, dc)
	if err != nil {
		return nil, env, err
	}
	endpoints := opts.Endpoints
	t.connected = opts
	drv, err := brokers.New(dc, opts)
	if err != nil {
		if errors.Is(err, brokers.ErrUnknownDriver) {
			return nil, env, badInput(err)
		}
		return nil, env, err
	}
	where := driver.RedactEndpoints(strings.Join(endpoints, ","))
	if reg, _ := brokers.Lookup(dc.Name); reg.InProcess {
		where = "this process"
	} else if where == "" {
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
			return nil, env, failed(err)
		}
		if errors.Is(err, workload.ErrInvalid) {
			return nil, env, err // the driver config names what is not there: bad input
		}
		if ctx.Err() == nil && timedOut {
			err = fmt.Errorf("no answer from %s at %s within %s: %w", dc.Name, where, connectTimeout, err)
		}
		if reg, ok := brokers.Lookup(dc.Name); ok && reg.LocalKind() != "" && !t.usesLocal(dc) {
			err = fmt.Errorf("%w\n(for a broker on this machine: 'brokerbench local up %s' starts one, or leave the addresses out of the driver config and run starts it)", err, reg.LocalKind())
		}
		return nil, env, failed(err)
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
	t.findBrokerProcesses(ctx, dc, endpoints)
	env.BrokerEndpoint = driver.RedactEndpoints(strings.Join(endpoints, ","))
	return drv, env, nil
}

// findBrokerProcesses finds, when no local cluster is in use, the
// processes on this machine that listen at the addresses a driver for dc
// connects to (endpoints, else its config's own), to sample as the
// broker's nodes, and says which in one line when they are not those it
// said last.
func (t *Target) findBrokerProcesses(ctx context.Context, dc *workload.DriverConfig, endpoints []string) {
	t.listening = nil
	if t.cluster != nil {
		return
	}
	if len(endpoints) == 0 {
		reg, _ := brokers.Lookup(dc.Name)
		endpoints = configuredEndpoints(dc, reg.EndpointSettings)
	}
	resolve := func(host string) []netip.Addr { return resolveHost(ctx, host) }
	nodes, said := brokerProcesses(endpoints, os.Getpid(), resolve, proc.Listeners, proc.Name)
	t.listening = nodes
	line := ""
	switch len(said) {
	case 0:
	case 1:
		line = "sampling the broker process on this machine: " + said[0]
	default:
		line = "sampling the broker processes on this machine: " + strings.Join(said, "; ")
	}
	if line != "" && line != t.said {
		fmt.Fprintln(t.io.Err, line)
	}
	t.said = line
}

// brokers is the size of the target cluster: for the local target, the
// most brokers a local cluster may have; else what the driver for dc reads
// from the cluster (1 if it cannot tell).
func (t *Target) brokers(ctx context.Context, dc *workload.DriverConfig) (int, error) {
	if t.usesLocal(dc) {
		return MaxLocalBrokers, nil
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
// target is a local cluster (else the processes found listening at the
// broker's addresses on this machine: see findBrokerProcesses), and the
// brokers' metrics endpoints: the local nodes' "metrics" listeners, or
// those given with --broker-metrics. It reads the nodes' PIDs now: a node
// restarted by a fault is sampled again under its new PID only by the
// next run.
func (t *Target) systemSampler() func() *results.System {
	var nodes []sysmetrics.Node
	var endpoints []brokermetrics.Target
	for i, u := range t.metricsURLs {
		endpoints = append(endpoints, brokermetrics.Target{Node: i + 1, URL: u, Read: brokers.MetricsReader(u)})
	}
	if t.cluster != nil {
		st := t.cluster.Status()
		for _, n := range st.Nodes {
			if n.Running {
				nodes = append(nodes, sysmetrics.Node{ID: n.ID, PID: n.PID})
			}
			if n.MetricsURL != "" && len(t.metricsURLs) == 0 {
				endpoints = append(endpoints, brokermetrics.Target{Node: n.ID, URL: withPassword(n.MetricsURL, st.Security), Read: brokers.MetricsReader(n.MetricsURL)})
			}
		}
		if p := st.LinkProxy; p != nil && p.Running {
			nodes = append(nodes, sysmetrics.Node{PID: p.PID, LinkProxy: true})
		}
	} else {
		nodes = t.listening
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

// withPassword returns a local node's metrics endpoint rawURL with the
// password of the secured cluster sec in it, when it names the cluster's
// user without one (an endpoint that asks for a login, as Artemis'
// console does): the cluster's status, which the user sees, holds the
// endpoint without it. Otherwise, and when the password cannot be read
// (the read then fails and the node's metrics are left out), rawURL. An
// endpoint that says where its reader finds the password (a passwordFile
// parameter, as the MQTT $SYS reader's) is as given: that reader refuses
// a password in the URL.
func withPassword(rawURL string, sec *local.Security) string {
	u, err := url.Parse(rawURL)
	if err != nil || sec == nil || u.User == nil || u.User.Username() != sec.Username || u.Query().Has("passwordFile") {
		return rawURL
	}
	if _, set := u.User.Password(); set {
		return rawURL
	}
	pw, err := sec.Password()
	if err != nil {
		return rawURL
	}
	u.User = url.UserPassword(sec.Username, pw)
	return u.String()
}

// describe records where and how res was measured.
func describe(res *results.Run, env results.Environment, dc *workload.DriverConfig, drv driver.Driver, w *workload.Workload) {
	res.Environment = env
	res.Driver = results.Driver{Name: dc.Name, Source: dc.Source, Format: dc.Format, ReplicationFactor: dc.ReplicationFactor, Effective: drv.EffectiveConfig()}
	if w.ReplicationFactor > 0 {
		res.Driver.ReplicationFactor = w.ReplicationFactor
	}
}
