package local

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is what differs between broker kinds: how a release is installed,
// how a cluster's nodes are laid out and configured, how a node's process
// is started, and when the cluster is ready. Everything else (addresses,
// ports, processes, state, faults) is the Cluster's, the same for every
// kind and size.
type Kind interface {
	// Name is the kind's name, as on the command line ("kafka").
	Name() string
	// Product is the broker software's name, for results ("Apache Kafka").
	Product() string
	// Version is the release installed and run.
	Version() string
	// Install fetches the release into cacheDir, unless already there.
	Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error
	// Layout plans the nodes of c: ids, roles, hosts and the listeners
	// each needs (the cluster allocates their ports). The client listener
	// is named "client".
	Layout(c *Cluster) []*Node
	// Configure writes every node's config and prepares its storage;
	// fresh is true when the nodes' directories are new.
	Configure(ctx context.Context, c *Cluster, fresh bool) error
	// Command is the node's process command line; it must contain the
	// node's directory (Node.marker).
	Command(c *Cluster, n *Node) []string
	// Ready returns nil once the cluster serves clients with every node
	// in place.
	Ready(ctx context.Context, c *Cluster) error
}

// Environer is implemented by kinds whose node processes take settings
// from environment variables as well as from their command line.
type Environer interface {
	// Environ returns "NAME=value" entries added to the node's process's
	// environment.
	Environ(c *Cluster, n *Node) []string
}

// Metered is implemented by kinds whose nodes serve their own metrics
// other than on a Prometheus endpoint at the "metrics" port's /metrics.
type Metered interface {
	// MetricsURL is where node n's metrics are read ("" if nowhere).
	MetricsURL(c *Cluster, n *Node) string
}

// StartInOrder is implemented by kinds whose new cluster's nodes must
// start one after another, each serving before the next starts: a new
// node joins the cluster through the nodes already running. The nodes of
// an existing cluster start together, as its members wait for each other.
type StartInOrder interface {
	// NodeReady returns nil once node n serves.
	NodeReady(ctx context.Context, c *Cluster, n *Node) error
}

// Cluster is a broker cluster on this machine: one process per node, each
// node on its own loopback address, its state in StateDir. Brokers and
// Controllers size it; the layout, recorded in StateDir, is kept across
// restarts while the size does not change.
type Cluster struct {
	Kind Kind
	// CacheDir holds installed releases, shared by every cluster.
	CacheDir string
	// StateDir holds the cluster's record and one directory per node.
	StateDir string
	// Port is the client port every broker listens on, each on its own
	// address.
	Port int
	// Brokers is the number of broker nodes; Controllers the number of
	// dedicated controller nodes, for kinds that have them (0: brokers
	// double as controllers).
	Brokers, Controllers int
	// HeapMB is each broker node's memory, for kinds that set one.
	HeapMB int
	// AdvertisedPort, if not zero, is the client port a single-node
	// cluster tells clients to connect to instead of Port: a proxy in
	// front of it.
	AdvertisedPort int
	// Links puts every connection between nodes, and from the clients to
	// the nodes, through a link proxy, so that each link can be delayed,
	// throttled or cut on its own (see ShapeLinks). Clients must resolve
	// the names the nodes advertise with ClientHosts.
	Links bool
	// Listeners are the client listeners the nodes serve, for kinds that
	// can serve clients over TLS and with authentication (Securer): the
	// first on Port, the others on ports chosen free. Empty: the kind's
	// plain listener alone. A cluster serving a secured listener has
	// credentials of its own (Security).
	Listeners []string
	// Log receives progress messages; nil discards them.
	Log io.Writer

	// ID is the cluster's identity, kept in its record.
	ID     string
	nodes  []*Node  // from the record or the layout
	proxy  *Node    // the link proxy of the cluster as planned or recorded
	served []string // the listeners of the cluster as planned or recorded
}

// linked reports whether the cluster, as planned or as recorded, carries
// its links through the link proxy. (Links is what Up is asked for.)
func (c *Cluster) linked() bool { return c.proxy != nil }

// record is the cluster's state file.
type record struct {
	Kind        string  `json:"kind"`
	Version     string  `json:"version"`
	ID          string  `json:"id"`
	Brokers     int     `json:"brokers"`
	Controllers int     `json:"controllers"`
	Nodes       []*Node `json:"nodes"`
	LinkProxy   *Node   `json:"linkProxy,omitempty"`
	// Listeners are the client listeners served; none recorded: the
	// kind's plain one.
	Listeners []string `json:"listeners,omitempty"`
}

func (c *Cluster) recordFile() string { return filepath.Join(c.StateDir, "cluster.json") }

func (c *Cluster) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// load reads the cluster's record; ok is false without one.
func (c *Cluster) load() (record, bool) {
	var r record
	data, err := os.ReadFile(c.recordFile())
	if err != nil || json.Unmarshal(data, &r) != nil || r.Kind != c.Kind.Name() {
		return record{}, false
	}
	return r, true
}

func (c *Cluster) save() error {
	data, err := json.MarshalIndent(record{Kind: c.Kind.Name(), Version: c.Kind.Version(), ID: c.ID,
		Brokers: c.Brokers, Controllers: c.Controllers, Nodes: c.nodes, LinkProxy: c.proxy, Listeners: c.served}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.recordFile(), append(data, '\n'), 0o644)
}

// Nodes returns the cluster's nodes: those recorded, else those planned.
func (c *Cluster) Nodes() []*Node {
	if c.nodes == nil {
		if r, ok := c.load(); ok {
			c.nodes, c.ID, c.proxy, c.served = r.Nodes, r.ID, r.LinkProxy, r.Listeners
		}
	}
	return c.nodes
}

// Node returns the node with id, or nil.
func (c *Cluster) Node(id int) *Node {
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Bootstrap returns the client addresses of the broker nodes: with links,
// names that ClientHosts resolves.
func (c *Cluster) Bootstrap() []string {
	var addrs []string
	for _, n := range c.Nodes() {
		if _, ok := n.Ports["client"]; ok {
			addrs = append(addrs, fmt.Sprintf("%s:%d", c.AdvertisedHost(n), n.Ports["client"]))
		}
	}
	return addrs
}

// NodeStatus is one node and its state.
type NodeStatus struct {
	Node
	Running bool   `json:"running"`
	PID     int    `json:"pid,omitempty"`
	Log     string `json:"logFile"`
	// MetricsURL is where the node's own metrics are read (see
	// brokermetrics.Target); empty if it serves none.
	MetricsURL string `json:"metricsUrl,omitempty"`
}

// Status describes a local cluster.
type Status struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
	// Running is true when every node runs.
	Running bool `json:"running"`
	// Bootstrap lists the brokers' client addresses.
	Bootstrap []string     `json:"bootstrap"`
	Nodes     []NodeStatus `json:"nodes"`
	// Listeners are the client listeners served, for kinds that serve
	// several (Securer): the first on the bootstrap addresses, the others
	// on the ports of their names.
	Listeners []string `json:"listeners,omitempty"`
	// Security says where a secured cluster's credentials are.
	Security *Security `json:"security,omitempty"`
	// LinkProxy is the process carrying the links, with Links; clients
	// resolve the names in the bootstrap addresses with ClientHosts.
	LinkProxy   *NodeStatus       `json:"linkProxy,omitempty"`
	ClientHosts map[string]string `json:"clientHosts,omitempty"`
	StateDir    string            `json:"stateDir"`
}

// Endpoints returns the addresses of the broker nodes' listener: the
// bootstrap addresses for "client", "" or the client listener's name,
// else each node's host and port of that listener (nil if the nodes have
// none).
func (s Status) Endpoints(listener string) []string {
	if listener == "" || listener == "client" || len(s.Listeners) > 0 && listener == s.Listeners[0] {
		return s.Bootstrap
	}
	var addrs []string
	for _, n := range s.Nodes {
		if port, ok := n.Ports[listener]; ok {
			addrs = append(addrs, fmt.Sprintf("%s:%d", n.Host, port))
		}
	}
	if len(addrs) == 0 && slices.Contains(s.Listeners, listener) {
		return s.Bootstrap // a listener without a port of its own shares the client port
	}
	return addrs
}

// Address is the first broker's client address.
func (s Status) Address() string {
	if len(s.Bootstrap) == 0 {
		return ""
	}
	return s.Bootstrap[0]
}

// Status reports the cluster's nodes and whether each runs.
func (c *Cluster) Status() Status {
	nodes := c.Nodes() // reads the record: the nodes and the listeners served
	st := Status{Kind: c.Kind.Name(), Version: c.Kind.Version(), StateDir: c.StateDir, Bootstrap: c.Bootstrap()}
	if ls := c.listeners(); len(ls) > 0 && len(nodes) > 0 {
		st.Listeners, st.Security = ls, c.Security()
	}
	st.Running = len(c.Nodes()) > 0
	for _, n := range c.Nodes() {
		pid, running := n.PID()
		ns := NodeStatus{Node: *n, Running: running, Log: n.LogFile(), MetricsURL: c.metricsURL(n)}
		if running {
			ns.PID = pid
		}
		st.Running = st.Running && running
		st.Nodes = append(st.Nodes, ns)
	}
	if c.proxy != nil {
		pid, running := c.proxy.PID()
		st.LinkProxy = &NodeStatus{Node: *c.proxy, Running: running, Log: c.proxy.LogFile()}
		if running {
			st.LinkProxy.PID = pid
		}
		st.Running = st.Running && running
		st.ClientHosts = c.ClientHosts()
	}
	return st
}

// metricsURL is where node n's metrics are read: as its kind says, else
// the Prometheus endpoint of its "metrics" port, if it has one.
func (c *Cluster) metricsURL(n *Node) string {
	if m, ok := c.Kind.(Metered); ok {
		return m.MetricsURL(c, n)
	}
	if _, ok := n.Ports["metrics"]; ok {
		return "http://" + n.Addr("metrics") + "/metrics"
	}
	return ""
}

// Up installs the kind's release if needed and starts the cluster, or
// reuses it if it already runs with the same size. Nodes left running by a
// cluster that was not stopped (a killed brokerbench, a different size) are
// stopped first, and said so. It waits until the kind says the cluster is
// ready.
func (c *Cluster) Up(ctx context.Context) (Status, error) {
	if err := c.CheckListeners(); err != nil {
		return Status{}, err
	}
	prev, had := c.load()
	c.served = nil
	want, recorded := c.listeners(), prev.Listeners
	if recorded == nil && had {
		recorded = (&Cluster{Kind: c.Kind}).listeners()
	}
	same := had && prev.Brokers == c.Brokers && prev.Controllers == c.Controllers && (prev.LinkProxy != nil) == c.Links && slices.Equal(want, recorded)
	if same {
		c.nodes, c.ID, c.proxy, c.served = prev.Nodes, prev.ID, prev.LinkProxy, prev.Listeners
		if st := c.Status(); st.Running {
			return st, c.waitReady(ctx, 60*time.Second)
		}
	}
	if had {
		left := prev.Nodes
		if prev.LinkProxy != nil {
			left = append(left, prev.LinkProxy)
		}
		if err := c.stopLeftovers(left); err != nil {
			return Status{}, err
		}
	}
	if err := c.Kind.Install(ctx, c.CacheDir, c.logf); err != nil {
		return Status{}, err
	}
	fresh := !same
	c.served = want
	if err := c.plan(prev, fresh); err != nil {
		return Status{}, err
	}
	if fresh {
		if err := c.makeCredentials(); err != nil {
			return Status{}, fmt.Errorf("make the cluster's certificates and password: %w", err)
		}
	}
	if c.linked() {
		for _, n := range c.nodes {
			if err := c.writeHostsFile(n); err != nil {
				return Status{}, fmt.Errorf("write node %d hosts file: %w", n.ID, err)
			}
		}
	}
	if err := c.Kind.Configure(ctx, c, fresh); err != nil {
		return Status{}, err
	}
	if err := c.save(); err != nil {
		return Status{}, fmt.Errorf("record the cluster in %s: %w", c.StateDir, err)
	}
	if c.proxy != nil {
		if err := c.startLinkProxy(ctx); err != nil {
			_ = c.Down()
			return Status{}, err
		}
	}
	ordered, inOrder := c.Kind.(StartInOrder)
	for _, n := range c.nodes {
		err := c.startNode(n)
		if err == nil && inOrder && fresh {
			err = c.waitFor(ctx, 120*time.Second, fmt.Sprintf("node %d", n.ID), func(ctx context.Context) error { return ordered.NodeReady(ctx, c, n) })
		}
		if err != nil {
			_ = c.Down()
			return Status{}, err
		}
	}
	if err := c.waitReady(ctx, 120*time.Second); err != nil {
		_ = c.Down()
		return Status{}, err
	}
	st := c.Status()
	c.logf("started %s %s: %d node(s), bootstrap %s (state %s)", c.Kind.Name(), c.Kind.Version(), len(c.nodes), strings.Join(st.Bootstrap, ","), c.StateDir)
	return st, nil
}

// stopLeftovers stops the running nodes of a previous layout.
func (c *Cluster) stopLeftovers(nodes []*Node) error {
	var running []*Node
	for _, n := range nodes {
		if pid, ok := n.PID(); ok {
			c.logf("stopping node %d (pid %d) left running by an earlier cluster in %s", n.ID, pid, c.StateDir)
			running = append(running, n)
		}
	}
	return errors.Join(stopAll(running), c.stopForked(nodes))
}

// stopForked stops what stopped nodes forked and left running.
func (c *Cluster) stopForked(nodes []*Node) error {
	var errs []error
	for _, n := range nodes {
		pids, err := n.stopForked(10 * time.Second)
		if len(pids) > 0 {
			c.logf("stopped %v, left running by node %d's process", pids, n.ID)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// plan lays the cluster out: node directories (emptied when fresh), and a
// port for each listener, the client port preferred and every other chosen
// free by the system. The client port of a node that is taken by another
// process is an error: brokers must be reachable where the user expects.
func (c *Cluster) plan(prev record, fresh bool) error {
	c.ID = prev.ID
	if fresh || c.ID == "" {
		c.ID = newClusterID()
	}
	c.nodes = c.Kind.Layout(c)
	c.proxy = nil
	planned := c.nodes
	if c.Links {
		c.proxy = c.linkProxyNode()
		planned = append(slices.Clip(planned), c.proxy)
	}
	taken := map[string]map[int]bool{}
	for _, n := range planned {
		if fresh {
			if err := os.RemoveAll(n.Dir); err != nil {
				return fmt.Errorf("clear %s: %w", n.Dir, err)
			}
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", n.Dir, err)
		}
		if taken[n.Host] == nil {
			taken[n.Host] = map[int]bool{}
		}
		for _, name := range slices.Sorted(maps.Keys(n.Ports)) {
			preferred := 0
			if name == "client" {
				preferred = c.Port
				if !portFree(n.Host, preferred) {
					return fmt.Errorf("port %d on %s: %w", preferred, n.Host, ErrPortInUse)
				}
			}
			port, err := allocatePort(n.Host, preferred, taken[n.Host])
			if err != nil {
				return err
			}
			n.Ports[name] = port
			taken[n.Host][port] = true
		}
	}
	return nil
}

func (c *Cluster) startNode(n *Node) error {
	var env []string
	if e, ok := c.Kind.(Environer); ok {
		env = e.Environ(c, n)
	}
	pid, err := n.start(c.Kind.Command(c, n), env)
	if err != nil {
		return err
	}
	c.logf("started node %d (%s) on %s (pid %d, log %s)", n.ID, strings.Join(n.Roles, "+"), n.Host, pid, n.LogFile())
	return nil
}

// waitReady waits until the kind says the cluster is ready, failing early
// if a node exits.
func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	return c.waitFor(ctx, limit, "cluster", func(ctx context.Context) error { return c.Kind.Ready(ctx, c) })
}

// waitFor waits until ready returns nil, failing early if a started node
// exits; what names the part of the cluster waited for in errors.
func (c *Cluster) waitFor(ctx context.Context, limit time.Duration, what string, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		for _, n := range c.nodes {
			if _, err := os.Stat(n.pidFile()); err != nil {
				continue // not started yet
			}
			if !n.runningAfterExec() {
				return fmt.Errorf("%s node %d exited during start-up; last lines of %s:\n%s", c.Kind.Name(), n.ID, n.LogFile(), tail(n.LogFile(), 15))
			}
		}
		if c.proxy != nil {
			if _, ok := c.proxy.PID(); !ok {
				return fmt.Errorf("the link proxy exited; last lines of %s:\n%s", c.proxy.LogFile(), tail(c.proxy.LogFile(), 15))
			}
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		last = ready(rctx)
		rcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("interrupted while the %s %s in %s was starting (%v): %w", c.Kind.Name(), what, c.StateDir, last, ctx.Err())
			}
			return fmt.Errorf("%s %s in %s not ready within %s: %v", c.Kind.Name(), what, c.StateDir, limit, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// runningAfterExec reports whether the node's process runs, looking
// twice 200 ms apart: while a start script execs the broker (RabbitMQ's
// does), the process's command line reads empty for a moment and the
// process cannot be told from another.
func (n *Node) runningAfterExec() bool {
	if _, ok := n.PID(); ok {
		return true
	}
	time.Sleep(200 * time.Millisecond)
	_, ok := n.PID()
	return ok
}

// Restart starts a stopped or killed node again with its layout and data.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	n := c.Node(id)
	if n == nil {
		return fmt.Errorf("no node %d in %s", id, c.StateDir)
	}
	if _, ok := n.PID(); ok {
		return fmt.Errorf("node %d is running", id)
	}
	return c.startNode(n)
}

// Down stops every node by its PID, all at once (SIGTERM, then SIGKILL
// after 30 s). Nodes that are not running are skipped.
func (c *Cluster) Down() error {
	var running []*Node
	for _, n := range c.Nodes() {
		if pid, ok := n.PID(); ok {
			c.logf("stopping %s node %d (pid %d)", c.Kind.Name(), n.ID, pid)
			running = append(running, n)
		} else {
			_ = os.Remove(n.pidFile())
		}
	}
	err := errors.Join(stopAll(running), c.stopForked(c.Nodes()))
	if c.proxy != nil {
		// The links go last: nodes shutting down still talk to each other.
		if pid, ok := c.proxy.PID(); ok {
			c.logf("stopping the link proxy (pid %d)", pid)
		}
		err = errors.Join(err, c.proxy.Stop(10*time.Second))
	}
	return err
}

// stopAll stops nodes in parallel: a quorum member waits for the others,
// so stopping them one by one takes longest.
func stopAll(nodes []*Node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A paused node ignores SIGTERM until continued.
			_ = n.Resume()
			errs[i] = n.Stop(30 * time.Second)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loopbackHost returns the loopback address of a cluster's node: a
// single node keeps 127.0.0.1; in a cluster, broker i is 127.0.1.i and
// dedicated controller j is 127.0.2.j.
func loopbackHost(single bool, controllerOnly bool, index int) string {
	switch {
	case single:
		return "127.0.0.1"
	case controllerOnly:
		return net.IPv4(127, 0, 2, byte(index)).String()
	default:
		return net.IPv4(127, 0, 1, byte(index)).String()
	}
}

// newClusterID returns a random 16-byte id in URL-safe base64, the form
// Kafka's cluster ids take. Like Kafka's own, it never starts with '-',
// which command lines would read as an option (1 id in 64 did, and the
// storage tool then refused its -t argument).
func newClusterID() string {
	b := make([]byte, 16)
	for {
		_, _ = rand.Read(b)
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id
		}
	}
}

// kinds are the broker kinds brokerbench can run locally: each one's
// constructor of a cluster with default directories, and its usual client
// port.
var kinds = map[string]struct {
	newCluster func(port, brokers int) *Cluster
	port       int
}{
	"kafka":    {NewKafka, 9092},
	"nats":     {NewNATS, 4222},
	"rabbitmq": {NewRabbitMQ, 5672},
	"redis":    {NewRedis, 6379},
}

// KindNames returns the kinds of local broker brokerbench runs, sorted.
func KindNames() []string { return slices.Sorted(maps.Keys(kinds)) }

// DefaultPort returns the usual client port of a kind of broker.
func DefaultPort(kind string) int { return kinds[kind].port }

// New returns a local cluster of kind with brokers nodes, its clients on
// port (0: the kind's usual one), with default directories.
func New(kind string, port, brokers int) (*Cluster, error) {
	k, ok := kinds[kind]
	if !ok {
		return nil, fmt.Errorf("brokerbench cannot run %q locally; it runs: %s", kind, strings.Join(KindNames(), ", "))
	}
	if port == 0 {
		port = k.port
	}
	return k.newCluster(port, brokers), nil
}
