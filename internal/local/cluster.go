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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is what differs between broker kinds: how a release is installed,
// how a cluster's nodes are laid out and configured, how a node's process
// is started, and when the cluster is ready. Everything else (addresses,
// ports, processes, state, links) is the Cluster's, the same for every
// kind and size. Each broker's package (internal/brokers/<name>)
// implements its kind, and its module declares what the kind's clusters
// can be (how many nodes, whether links).
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
	// each needs (the cluster allocates their ports: a listener's port in
	// the layout, if not 0, is the one preferred where free). The client
	// listener is named "client", on the cluster's port.
	Layout(c *Cluster) []*Node
	// Configure writes every node's config and prepares its storage;
	// fresh is true when the nodes' directories are new.
	Configure(ctx context.Context, c *Cluster, fresh bool) error
	// Command is the node's process command line; it must contain the
	// node's directory (Node.Marker).
	Command(c *Cluster, n *Node) []string
	// Ready returns nil once the cluster serves clients with every node
	// in place.
	Ready(ctx context.Context, c *Cluster) error
}

// Releaser is implemented by kinds that can install and run releases
// other than their default one, each beside the others in the cache.
type Releaser interface {
	// Release returns the kind installing and running release version,
	// or an error saying which releases it runs.
	Release(version string) (Kind, error)
}

// WithRelease returns kind running release version: kind itself when
// version is empty or kind's own, else the kind's Release. A kind that
// is not a Releaser runs its own release alone.
func WithRelease(kind Kind, version string) (Kind, error) {
	if version == "" || version == kind.Version() {
		return kind, nil
	}
	r, ok := kind.(Releaser)
	if !ok {
		return nil, fmt.Errorf("brokerbench runs %s %s only", kind.Product(), kind.Version())
	}
	return r.Release(version)
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
// an existing cluster start together, as its members wait for each other,
// unless the kind is a RestartInOrder.
type StartInOrder interface {
	// NodeReady returns nil once node n serves.
	NodeReady(ctx context.Context, c *Cluster, n *Node) error
}

// RestartInOrder is implemented by StartInOrder kinds whose nodes start
// one after another also when the cluster starts again with its data:
// RocketMQ's name server keeps nothing, and its proxy stops at once
// unless a broker has registered with it again.
type RestartInOrder interface {
	StartInOrder
	// RestartsInOrder reports whether the nodes of an existing cluster
	// start in order.
	RestartsInOrder() bool
}

// LastToStop is implemented by kinds some of whose nodes must outlive the
// others' shutdown: Pulsar's brokers unregister and close their ledgers
// through the ZooKeeper node, and wait for it while it is gone.
type LastToStop interface {
	// StopsLast reports whether node n stops once the others have.
	StopsLast(n *Node) bool
}

// Initializer is implemented by StartInOrder kinds whose new cluster
// needs a step run once between the start of two of its nodes: Pulsar
// writes its cluster's metadata into the metadata store, which must
// serve, before any broker starts.
type Initializer interface {
	// Initialize is called, once for each node of a new cluster in the
	// order they start, after node n serves and before the next starts;
	// it runs the step when n is the node the step waits for, and returns
	// nil at once for the others.
	Initialize(ctx context.Context, c *Cluster, n *Node) error
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
	// StartedBy is who starts the cluster, recorded with it:
	// StartedByUser ('local up'), or, when empty, StartedByRun (this
	// process, which stops the cluster when it ends).
	StartedBy string
	// Replace lets Up replace a recorded cluster of another shape, and
	// delete its data, whoever started it. Without it, Up replaces only a
	// cluster that a run left over (see ReplaceError).
	Replace bool

	// ID is the cluster's identity, kept in its record.
	ID     string
	nodes  []*Node  // from the record or the layout
	proxy  *Node    // the link proxy of the cluster as planned or recorded
	served []string // the listeners of the cluster as planned or recorded
	// brokers and controllers are the sizes as planned or recorded;
	// version the release recorded (empty: none recorded); owner and run
	// who started the cluster, as recorded.
	brokers, controllers int
	version              string
	owner                string
	run                  *runOwner
}

// Linked reports whether the cluster, as planned or as recorded, carries
// its links through the link proxy. (Links is what Up is asked for.)
func (c *Cluster) Linked() bool { return c.proxy != nil }

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
	// StartedBy is who started the cluster (StartedByUser,
	// StartedByRun); Run the run that did. Records written before they
	// were kept have neither.
	StartedBy string    `json:"startedBy,omitempty"`
	Run       *runOwner `json:"run,omitempty"`
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
	c.version = c.Kind.Version()
	data, err := json.MarshalIndent(record{Kind: c.Kind.Name(), Version: c.version, ID: c.ID,
		Brokers: c.brokers, Controllers: c.controllers, Nodes: c.nodes, LinkProxy: c.proxy, Listeners: c.served,
		StartedBy: c.owner, Run: c.run}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.recordFile(), append(data, '\n'), 0o644)
}

// Nodes returns the cluster's nodes: those recorded, else those planned.
func (c *Cluster) Nodes() []*Node {
	if c.nodes == nil {
		if r, ok := c.load(); ok {
			c.adopt(r)
		}
	}
	return c.nodes
}

// adopt takes the recorded cluster r as the cluster's layout.
func (c *Cluster) adopt(r record) {
	c.nodes, c.ID, c.proxy, c.served = r.Nodes, r.ID, r.LinkProxy, r.Listeners
	c.brokers, c.controllers, c.owner, c.run = r.Brokers, r.Controllers, r.StartedBy, r.Run
	c.version = r.Version
}

// Version is the release of the cluster: the one recorded, else the
// one Kind installs.
func (c *Cluster) Version() string {
	if c.Nodes() != nil && c.version != "" {
		return c.version
	}
	return c.Kind.Version()
}

// nodeKind is the kind a node of the cluster runs as: Kind at the
// release recorded, which a cluster read from its record (to restart a
// node) may not have been asked for.
func (c *Cluster) nodeKind() Kind {
	if k, err := WithRelease(c.Kind, c.Version()); err == nil {
		return k
	}
	return c.Kind
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
	// ClientAuth says what a secured cluster's clients present, when it
	// is not its user and password (see ClientAuther).
	ClientAuth string `json:"clientAuth,omitempty"`
	// LinkProxy is the process carrying the links, with Links; clients
	// resolve the names in the bootstrap addresses with ClientHosts.
	LinkProxy   *NodeStatus       `json:"linkProxy,omitempty"`
	ClientHosts map[string]string `json:"clientHosts,omitempty"`
	StateDir    string            `json:"stateDir"`
	// Brokers and Controllers are the numbers of broker nodes and of
	// dedicated controller nodes.
	Brokers     int `json:"brokers"`
	Controllers int `json:"controllers,omitempty"`
	// StartedBy says who started the cluster: StartedByUser,
	// StartedByRun, or "" for a record that does not say.
	StartedBy string `json:"startedBy,omitempty"`
	// RunPID is the run in progress that started the cluster and stops
	// it when it ends; 0 if none.
	RunPID int `json:"runPid,omitempty"`
}

// Shape is the cluster's shape: its size, links and listeners.
func (s Status) Shape() Shape {
	return Shape{Brokers: s.Brokers, Controllers: s.Controllers, Links: s.LinkProxy != nil, Listeners: s.Listeners, Version: s.Version}
}

// NodesRunning counts the nodes that run.
func (s Status) NodesRunning() int {
	n := 0
	for _, ns := range s.Nodes {
		if ns.Running {
			n++
		}
	}
	return n
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
	st := Status{Kind: c.Kind.Name(), Version: c.Version(), StateDir: c.StateDir, Bootstrap: c.Bootstrap()}
	if ls := c.ServedListeners(); len(ls) > 0 && len(nodes) > 0 {
		st.Listeners, st.Security = ls, c.Security()
		if a, ok := c.Kind.(ClientAuther); ok && st.Security != nil {
			st.ClientAuth = a.ClientAuth(st.Security)
		}
	}
	if len(nodes) > 0 {
		st.Brokers, st.Controllers, st.StartedBy = c.brokers, c.controllers, c.owner
		if c.owner == StartedByRun && c.run.live() {
			st.RunPID = c.run.PID
		}
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
// reuses it if it already runs with the same shape (see Shape); a stopped
// cluster of the same shape starts again with its data. A recorded cluster
// of another shape is replaced, its data deleted, only if Replace is set
// or a run started it that has ended (or is this process): else, when
// 'local up' started it or a run in progress, Up changes nothing and
// returns a *ReplaceError. Nodes still running from a cluster it replaces are
// stopped first, and said so. It waits, saying what for every few seconds,
// until the kind says the cluster is ready, failing early if a node stops.
func (c *Cluster) Up(ctx context.Context) (Status, error) {
	if err := c.CheckListeners(); err != nil {
		return Status{}, err
	}
	prev, had := c.load()
	c.served = nil
	defaults := (&Cluster{Kind: c.Kind}).ServedListeners()
	want, recorded := c.ServedListeners(), prev.Listeners
	if recorded == nil && had {
		recorded = defaults
	}
	asked := Shape{Brokers: c.Brokers, Controllers: c.Controllers, Links: c.Links, Listeners: want, Version: c.Kind.Version()}
	same := had && prev.shape(defaults).Equal(asked)
	if had && !same && !c.mayReplace(prev) {
		return Status{}, c.replaceError(prev, asked, defaults)
	}
	if same {
		c.adopt(prev)
		claimed := c.claim(prev)
		if st := c.Status(); st.Running {
			if claimed {
				if err := c.save(); err != nil {
					return Status{}, fmt.Errorf("record the cluster in %s: %w", c.StateDir, err)
				}
			}
			return st, c.waitReady(ctx, c.startLimit())
		}
	}
	if had {
		if !same && !prev.Run.isSelf() { // this process knows what it replaces its own clusters with
			st := (&Cluster{Kind: c.Kind, StateDir: c.StateDir}).Status()
			c.logf("replacing the %s cluster recorded in %s (%s; %s, %s) with one of %s: its data is deleted",
				c.Kind.Name(), c.StateDir, prev.shape(defaults), replaceState(st), Origin(st.StartedBy, st.RunPID), asked)
		}
		left := prev.Nodes
		if prev.LinkProxy != nil {
			left = append(left, prev.LinkProxy)
		}
		if err := c.stopLeftovers(left); err != nil {
			return Status{}, err
		}
	}
	fresh := !same
	c.served = want
	// Planned first: a taken port is reported before a download.
	if err := c.plan(prev, fresh); err != nil {
		return Status{}, err
	}
	if err := install(ctx, c.Kind, c.CacheDir, c.logf); err != nil {
		return Status{}, err
	}
	if fresh {
		c.owner, c.run = c.startedBy(), nil
		if c.owner == StartedByRun {
			c.run = self()
		}
		if err := c.makeCredentials(); err != nil {
			return Status{}, fmt.Errorf("make the cluster's certificates and password: %w", err)
		}
	}
	if c.Linked() {
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
	if r, ok := c.Kind.(RestartInOrder); !fresh {
		inOrder = ok && r.RestartsInOrder()
	}
	initializer, initializes := c.Kind.(Initializer)
	for i, n := range c.nodes {
		err := c.startNode(n)
		if err == nil && inOrder {
			err = c.waitFor(ctx, 120*time.Second, fmt.Sprintf("%s node %d to serve (the cluster's nodes start one after another)", c.Kind.Name(), n.ID),
				c.nodes[:i+1], func(ctx context.Context) error { return ordered.NodeReady(ctx, c, n) })
		}
		if err == nil && inOrder && initializes && fresh {
			err = initializer.Initialize(ctx, c, n)
		}
		if err != nil {
			_ = c.Down()
			return Status{}, err
		}
	}
	if err := c.waitReady(ctx, c.startLimit()); err != nil {
		_ = c.Down()
		return Status{}, err
	}
	st := c.Status()
	c.logf("started %s %s: %d node(s), bootstrap %s (state %s)", c.Kind.Name(), c.Kind.Version(), len(c.nodes), strings.Join(st.Bootstrap, ","), c.StateDir)
	return st, nil
}

// mayReplace reports whether Up may replace the recorded cluster prev, of
// another shape: when told to, or when prev is brokerbench's own, a
// cluster a run started that has ended or is this process.
func (c *Cluster) mayReplace(prev record) bool {
	return c.Replace || prev.leftOver()
}

// startedBy is who starts the cluster: StartedBy, by default a run.
func (c *Cluster) startedBy() string {
	if c.StartedBy == "" {
		return StartedByRun
	}
	return c.StartedBy
}

// claim makes the cluster, recorded as prev and reused with its shape,
// the one who starts it now: 'local up' takes over any cluster but one
// a run in progress started (it then runs until 'local down'); a run
// takes over one a run left over. A run reusing a cluster 'local up'
// started leaves it the user's. It reports whether the owner changed.
func (c *Cluster) claim(prev record) bool {
	inUse := prev.StartedBy == StartedByRun && !prev.leftOver()
	switch {
	case c.startedBy() == StartedByUser && prev.StartedBy != StartedByUser && !inUse:
		c.owner, c.run = StartedByUser, nil
	case c.startedBy() == StartedByRun && prev.StartedBy == StartedByRun && prev.leftOver() && !prev.Run.isSelf():
		c.owner, c.run = StartedByRun, self()
	default:
		return false
	}
	return true
}

// replaceError describes the refusal to replace the recorded cluster prev
// with one of the shape asked.
func (c *Cluster) replaceError(prev record, asked Shape, defaults []string) *ReplaceError {
	st := (&Cluster{Kind: c.Kind, StateDir: c.StateDir}).Status()
	return &ReplaceError{Kind: c.Kind.Name(), StateDir: c.StateDir, Recorded: prev.shape(defaults), Asked: asked,
		Running: st.Running, NodesRunning: st.NodesRunning(), StartedBy: st.StartedBy, RunPID: st.RunPID, DataBytes: dataBytes(prev.Nodes)}
}

// replaceState says whether the cluster of st runs.
func replaceState(st Status) string {
	e := ReplaceError{Running: st.Running, NodesRunning: st.NodesRunning(), Recorded: st.Shape()}
	return e.State()
}

// Attach takes the cluster recorded in StateDir as it is, running: its
// size, links and listeners become the cluster's, whatever was asked
// for, and nothing is started, stopped or recorded. It waits, bounded and
// saying what for, until the kind says the cluster is ready.
func (c *Cluster) Attach(ctx context.Context) (Status, error) {
	r, ok := c.load()
	if !ok {
		return Status{}, fmt.Errorf("no %s cluster is recorded in %s", c.Kind.Name(), c.StateDir)
	}
	c.adopt(r)
	c.Brokers, c.Controllers, c.Links, c.Listeners = r.Brokers, r.Controllers, r.LinkProxy != nil, r.Listeners
	st := c.Status()
	if !st.Running {
		return st, fmt.Errorf("the %s cluster in %s is not running (%d of %d nodes run)", c.Kind.Name(), c.StateDir, st.NodesRunning(), len(st.Nodes))
	}
	return st, c.waitReady(ctx, c.startLimit())
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
	return errors.Join(c.stopInOrder(running), c.stopForked(nodes))
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
// port for each listener: the client port; every other one where the
// Kind's Layout asks for it if free (a broker's usual port, for tools
// that expect it there), else chosen free by the system. A cluster started
// again with its data keeps the ports it recorded where they are still
// free, as its data may name them (a Pulsar bookie's identity is its
// address). A listener the node binds on every address (Node.EveryAddress)
// gets a port free on every address, used by no other listener of the
// cluster. The client port of a node that is taken by another process is
// an error: brokers must be reachable where the user expects.
func (c *Cluster) plan(prev record, fresh bool) error {
	recorded := map[int]map[string]int{}
	if !fresh {
		for _, n := range prev.Nodes {
			recorded[n.ID] = n.Ports
		}
	}
	c.ID = prev.ID
	if fresh || c.ID == "" {
		c.ID = newClusterID()
	}
	c.nodes = c.Kind.Layout(c)
	c.brokers, c.controllers = c.Brokers, c.Controllers
	c.proxy = nil
	planned := c.nodes
	if c.Links {
		c.proxy = c.linkProxyNode()
		planned = append(slices.Clip(planned), c.proxy)
	}
	// taken holds the ports handed out on each host ("": every address,
	// see Node.EveryAddress); anywhere all of them.
	taken, anywhere := map[string]map[int]bool{"": {}}, map[int]bool{}
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
			host, where := n.Host, n.Host
			inUse := func(p int) bool { return taken[n.Host][p] || taken[""][p] }
			if slices.Contains(n.EveryAddress, name) {
				host, where = "", "every address"
				inUse = func(p int) bool { return anywhere[p] }
			}
			preferred := recorded[n.ID][name]
			if preferred == 0 {
				preferred = n.Ports[name]
			}
			if name == "client" {
				preferred = c.Port
				if !portFree(host, preferred) {
					return fmt.Errorf("port %d on %s: %w", preferred, where, ErrPortInUse)
				}
			}
			port, err := allocatePort(host, preferred, inUse)
			if err != nil {
				return err
			}
			n.Ports[name] = port
			taken[host][port], anywhere[port] = true, true
		}
	}
	return nil
}

func (c *Cluster) startNode(n *Node) error {
	var env []string
	if e, ok := c.Kind.(Environer); ok {
		env = e.Environ(c, n)
	}
	pid, err := n.start(c.nodeKind().Command(c, n), env)
	if err != nil {
		return err
	}
	c.logf("started node %d (%s) on %s (pid %d, log %s)", n.ID, strings.Join(n.Roles, "+"), n.Host, pid, n.LogFile())
	return nil
}

// progressEvery is how often a wait for a cluster's nodes says what it
// waits for.
var progressEvery = 5 * time.Second

// attemptLimit bounds one check of readiness, even one that ignores its
// context.
const attemptLimit = 5 * time.Second

// startLimit bounds the wait for a cluster's nodes to be ready, once
// started or found running (perhaps just started again): 2 minutes, and
// one more for each node beyond the first. A 3-node Pulsar cluster (4
// JVMs) took 1m51s to start on 2 cores other work kept busy, and a broker
// of it killed and started again was not ready within a minute at a load
// average of 37; a node that stops ends the wait at once, however long
// its limit.
func (c *Cluster) startLimit() time.Duration {
	return time.Duration(1+max(len(c.nodes), 1)) * time.Minute
}

// waitReady waits until the kind says the cluster is ready, failing early
// if a node stops.
func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	what := fmt.Sprintf("the %s cluster in %s to be ready (every node up and serving clients)", c.Kind.Name(), c.StateDir)
	return c.waitFor(ctx, limit, what, c.nodes, func(ctx context.Context) error { return c.Kind.Ready(ctx, c) })
}

// waitFor waits, at most limit, until ready returns nil; what says what
// it waits for ("the kafka cluster in DIR to be ready"). Every
// progressEvery it says so, with the time waited and the last answer. It
// fails at once when one of nodes, which run when it starts, stops: by
// itself, or from outside ('local down' in another shell, a kill).
func (c *Cluster) waitFor(ctx context.Context, limit time.Duration, what string, nodes []*Node, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	pids := make([]int, len(nodes))
	for i, n := range nodes {
		pids[i], _ = readPID(n.pidFile())
	}
	began := time.Now()
	say := began.Add(progressEvery)
	var last error
	for {
		for i, n := range nodes {
			if err := c.checkRunning(n, pids[i]); err != nil {
				return err
			}
		}
		if c.proxy != nil {
			if _, ok := c.proxy.PID(); !ok {
				return fmt.Errorf("the link proxy exited while waiting for %s; last lines of %s:\n%s", what, c.proxy.LogFile(), tail(c.proxy.LogFile(), 15))
			}
		}
		if last = attempt(ctx, ready); last == nil {
			return nil
		}
		if now := time.Now(); !now.Before(say) {
			c.logf("waiting for %s: %s so far, at most %s; last answer: %v", what, now.Sub(began).Round(time.Second), limit, last)
			say = now.Add(progressEvery)
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("interrupted while waiting for %s (last answer: %v): %w", what, last, ctx.Err())
			}
			return fmt.Errorf("gave up waiting for %s after %s; last answer: %v", what, limit, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// attempt calls ready once, bounded by attemptLimit: a check that does
// not return when its context ends is left behind, not waited for.
func attempt(ctx context.Context, ready func(context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, attemptLimit)
	defer cancel()
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- ready(actx) }()
	select {
	case err := <-done:
		return err
	case <-actx.Done():
	}
	select { // a check that heeds its context returns its own error now
	case err := <-done:
		return err
	case <-time.After(time.Second):
		return fmt.Errorf("no answer after %s", time.Since(began).Round(100*time.Millisecond))
	}
}

// checkRunning returns an error saying how node n stopped if its process,
// pid when the wait began (0: none), no longer runs.
func (c *Cluster) checkRunning(n *Node, started int) error {
	pid, err := readPID(n.pidFile())
	switch {
	case err != nil && started != 0:
		return fmt.Errorf("%s node %d (pid %d) was stopped from outside while brokerbench waited for it: its PID file is gone, as 'brokerbench local down' removes it%s",
			c.Kind.Name(), n.ID, started, lastLinesOf(n.LogFile()))
	case err != nil:
		return fmt.Errorf("%s node %d is not running: it has no PID file in %s", c.Kind.Name(), n.ID, n.Dir)
	case started != 0 && pid != started:
		return fmt.Errorf("%s node %d was started again from outside while brokerbench waited for it (pid %d, then %d)", c.Kind.Name(), n.ID, started, pid)
	}
	if n.runningAfterExec() {
		return nil
	}
	return fmt.Errorf("%s node %d (pid %d) %s while brokerbench waited for it%s",
		c.Kind.Name(), n.ID, pid, n.exitReason(pid), lastLinesOf(n.LogFile()))
}

// lastLinesOf is the end of the log at path for an error message: "; last
// lines of PATH:\n...", or that it is empty.
func lastLinesOf(path string) string {
	if t := tail(path, 15); t != "" {
		return fmt.Sprintf("; last lines of %s:\n%s", path, t)
	}
	return fmt.Sprintf(" (%s is empty)", path)
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
	err := errors.Join(c.stopInOrder(running), c.stopForked(c.Nodes()))
	if c.proxy != nil {
		// The links go last: nodes shutting down still talk to each other.
		if pid, ok := c.proxy.PID(); ok {
			c.logf("stopping the link proxy (pid %d)", pid)
		}
		err = errors.Join(err, c.proxy.Stop(10*time.Second))
	}
	return err
}

// stopInOrder stops nodes, those the kind stops last (LastToStop) once
// the others have stopped, each group in parallel (stopAll).
func (c *Cluster) stopInOrder(nodes []*Node) error {
	last, ok := c.Kind.(LastToStop)
	if !ok {
		return c.stopAll(nodes)
	}
	var first, then []*Node
	for _, n := range nodes {
		if last.StopsLast(n) {
			then = append(then, n)
		} else {
			first = append(first, n)
		}
	}
	return errors.Join(c.stopAll(first), c.stopAll(then))
}

// stopAll stops nodes in parallel: a quorum member waits for the others,
// so stopping them one by one takes longest. Every progressEvery it says
// which nodes it still waits for.
func (c *Cluster) stopAll(nodes []*Node) error {
	errs := make([]error, len(nodes))
	stopped := make([]atomic.Bool, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A paused node ignores SIGTERM until continued.
			_ = n.Resume()
			errs[i] = n.Stop(stopGrace)
			stopped[i].Store(true)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	began := time.Now()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return errors.Join(errs...)
		case now := <-tick.C:
			var left []string
			for i, n := range nodes {
				if !stopped[i].Load() {
					left = append(left, strconv.Itoa(n.ID))
				}
			}
			c.logf("waiting for %s node(s) %s to exit: %s so far; SIGKILL after %s", c.Kind.Name(), strings.Join(left, ", "), now.Sub(began).Round(time.Second), stopGrace)
		}
	}
}

// stopGrace is how long a node is given to stop after SIGTERM.
const stopGrace = 30 * time.Second

// LoopbackHost returns the loopback address of a cluster's node: a
// single node keeps 127.0.0.1; in a cluster, broker i is 127.0.1.i and
// dedicated controller j is 127.0.2.j.
func LoopbackHost(single bool, controllerOnly bool, index int) string {
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
