// Package brokers is the registry of the brokers brokerbench can measure:
// one Module value per broker, declaring everything brokerbench knows of
// it — its driver, the local cluster it can start for it, where its
// nodes' own metrics are read, the OMB driver classes it accepts, its
// documentation page and what its model can do.
//
// A broker is one folder, internal/brokers/<name>, whose init function
// registers its module:
//
//	func init() { brokers.Register(brokers.Module{Name: "kafka", New: New, ...}) }
//
// and one blank import in package brokers/all, which the command links.
// The rest of brokerbench finds a broker only through this registry:
// by the driver name a config gives (Lookup, New), or by the kind of
// local cluster a command names (NewLocal).
package brokers

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/faults"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Module is everything brokerbench knows of one broker, declared once by
// the broker's package. Every field but the optional ones is checked by
// Register and by the registry's test.
type Module struct {
	// Name is the driver's name in configs ("kafka").
	Name string
	// New builds a driver from its config.
	New driver.Factory
	// Capabilities are what the broker's model can do; runs that need
	// more are refused before anything starts (Check).
	Capabilities driver.Capabilities
	// EndpointSettings are the config settings that hold the broker
	// addresses: the driver's own first ("bootstrap.servers"), then
	// those OMB's driver files name them with ("brokerAddress",
	// "redisHost"). When a config sets none of them and no address is
	// given, runs go to a local cluster (Local); when it sets one, to
	// the brokers it names.
	EndpointSettings []string
	// LocalListener returns the listener of the local cluster's nodes a
	// driver with config dc connects to ("stream", "sasl_ssl"); nil or ""
	// for their client listener. Optional.
	LocalListener func(dc *workload.DriverConfig) string

	// Local is the kind of cluster brokerbench starts on this machine for
	// the broker; nil when it starts none, and NoLocal says why. Two
	// modules may share one kind (the RabbitMQ drivers).
	Local *Local
	// NoLocal is why brokerbench starts no local cluster for the broker.
	NoLocal string
	// InProcess says the broker lives in the process that makes the
	// driver (the memory broker): runs need neither an address nor a
	// local cluster, and workers in other processes could not reach it.
	InProcess bool
	// Faults turns a fault schedule into faults on the broker drv
	// reaches, for a broker brokerbench makes faults on without a local
	// cluster (an in-process one); heal undoes what the faults left done.
	// Optional: without it, faults need a local cluster.
	Faults func(drv driver.Driver, schedule []workload.Fault) (sched []faults.Scheduled, heal func(), err error)

	// NoLeader, when not empty, says why faults cannot aim at a leader or
	// a controller (node: leader, controller): the broker has neither.
	// Optional: without it, such faults need a driver that can say which
	// node leads (driver.Placement, driver.HostPlacement).
	NoLeader string

	// Metrics is how the broker's nodes' own metrics are read; nil when
	// they have none, and NoMetrics says why.
	Metrics *Metrics
	// NoMetrics is why the broker's nodes have no metrics to read.
	NoMetrics string

	// OMBClasses are the OMB driver classes whose driver files the
	// broker's driver reads ("io.openmessaging.benchmark.driver.kafka.
	// KafkaBenchmarkDriver"). Optional.
	OMBClasses []string
	// OMBTopLevel are the settings OMB's driver files for the broker
	// carry at their top level ("natsHostUrl"), read into commonConfig
	// under the same name, where the driver validates them. Optional.
	OMBTopLevel []string
	// Docs is the broker's documentation page, from the repository's
	// root ("docs/drivers/kafka.md").
	Docs string
}

// Local is a kind of cluster brokerbench starts on this machine, and what
// such a cluster can be.
type Local struct {
	// Kind is the kind's name on the command line ("kafka").
	Kind string
	// Port is the kind's usual client port.
	Port int
	// New returns a cluster of the kind with brokers nodes, its clients
	// on port, with default directories.
	New func(port, brokers int) *local.Cluster
	// MaxNodes is the most broker nodes a local cluster of the kind has.
	MaxNodes int
	// NoLinks, when not empty, says why the kind's clusters cannot carry
	// their links through the link proxy (--links, link faults, a
	// setup's network); empty: they can.
	NoLinks string
	// Help says, for the local command's help, where the kind's software
	// comes from, what it needs and how its nodes are laid out: a
	// paragraph that starts with the broker's name and the kind's.
	Help string
	// Endpoints returns the addresses a driver is given of a running
	// cluster of the kind, st, whose listener it connects to; nil:
	// st.Endpoints(listener). Optional: for drivers that need more than
	// one listener of each node (Pulsar's binary protocol and admin API).
	Endpoints func(st local.Status, listener string) []string
}

// LocalEndpoints returns the addresses a driver of the broker is given of
// its running local cluster st, whose listener it connects to.
func (m Module) LocalEndpoints(st local.Status, listener string) []string {
	if m.Local != nil && m.Local.Endpoints != nil && len(st.Endpoints(listener)) > 0 {
		return m.Local.Endpoints(st, listener)
	}
	return st.Endpoints(listener)
}

// Metrics is how a broker's nodes' own metrics are read.
type Metrics struct {
	// Endpoint says what a node serves, for documentation ("Prometheus
	// text at /metrics, from the JMX exporter").
	Endpoint string
	// Serves reports whether a metrics endpoint given as u is of this
	// form (a redis:// address, a /varz path); nil: the form is the
	// Prometheus text format over HTTP, the default.
	Serves func(u *url.URL) bool
	// Read reads one node's endpoint; nil: brokermetrics.Prometheus.
	Read brokermetrics.Reader
}

var (
	mu      sync.RWMutex
	modules = map[string]Module{}
	kinds   = map[string]*Local{}
)

// Register makes a broker available by its module's name. It panics if
// the name is taken, the module lacks a factory, a local kind or a
// reason for none, a metrics source or a reason for none, or a docs page,
// or if one of its OMB classes or its local kind's name belongs to
// another broker.
func Register(m Module) {
	mu.Lock()
	defer mu.Unlock()
	switch _, dup := modules[m.Name]; {
	case m.Name == "" || dup:
		panic(fmt.Sprintf("broker %q registered twice or without a name", m.Name))
	case m.New == nil:
		panic(fmt.Sprintf("broker %q registered without a driver factory", m.Name))
	case (m.Local == nil) == (m.NoLocal == ""):
		panic(fmt.Sprintf("broker %q must declare either a local kind or why it has none", m.Name))
	case (m.Metrics == nil) == (m.NoMetrics == ""):
		panic(fmt.Sprintf("broker %q must declare either a metrics source or why it has none", m.Name))
	case m.Docs == "":
		panic(fmt.Sprintf("broker %q registered without a docs page", m.Name))
	}
	if l := m.Local; l != nil {
		if other, ok := kinds[l.Kind]; ok && other != l {
			panic(fmt.Sprintf("broker %q declares local kind %q, another broker's", m.Name, l.Kind))
		}
		if l.Kind == "" || l.New == nil || l.Port == 0 || l.MaxNodes < 1 || l.Help == "" {
			panic(fmt.Sprintf("broker %q declares a local kind without a name, a constructor, a port, a size or its help", m.Name))
		}
		kinds[l.Kind] = l
	}
	for _, class := range m.OMBClasses {
		workload.RegisterOMBDriverClass(class, m.Name, m.OMBTopLevel...)
	}
	modules[m.Name] = m
}

// Lookup returns the module of the broker whose driver is called name.
func Lookup(name string) (Module, bool) {
	mu.RLock()
	defer mu.RUnlock()
	m, ok := modules[name]
	return m, ok
}

// Modules returns every registered module, sorted by name.
func Modules() []Module {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Module, 0, len(modules))
	for _, n := range slices.Sorted(maps.Keys(modules)) {
		out = append(out, modules[n])
	}
	return out
}

// Names returns the registered driver names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(modules))
}

// LocalKind is the kind of local cluster the broker's runs go to ("" if
// brokerbench starts none for it).
func (m Module) LocalKind() string {
	if m.Local == nil {
		return ""
	}
	return m.Local.Kind
}

// ErrUnknownDriver is returned by New for a driver name no broker
// registered.
var ErrUnknownDriver = errors.New("unknown driver")

// New builds the driver cfg names.
func New(cfg *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	m, ok := Lookup(cfg.Name)
	if !ok {
		return nil, UnknownDriver(cfg)
	}
	return m.New(cfg, opts)
}

// UnknownDriver is the error for a config naming a driver no broker
// registered: it wraps ErrUnknownDriver and lists the known ones.
func UnknownDriver(cfg *workload.DriverConfig) error {
	return fmt.Errorf("%w %q (from %s): available drivers: %s", ErrUnknownDriver, cfg.Name, cfg.Source, strings.Join(Names(), ", "))
}

// LocalKinds returns the kinds of local cluster brokerbench runs, sorted.
func LocalKinds() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(kinds))
}

// LocalHelp returns the help of every kind of local cluster, in the
// order of their names.
func LocalHelp() []string {
	mu.RLock()
	defer mu.RUnlock()
	var help []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		help = append(help, kinds[k].Help)
	}
	return help
}

// DefaultPort returns the usual client port of a kind of local cluster
// (0 for an unknown kind).
func DefaultPort(kind string) int {
	mu.RLock()
	defer mu.RUnlock()
	if l, ok := kinds[kind]; ok {
		return l.Port
	}
	return 0
}

// NewLocal returns a local cluster of kind with brokers nodes, its
// clients on port (0: the kind's usual one), with default directories.
func NewLocal(kind string, port, brokers int) (*local.Cluster, error) {
	mu.RLock()
	l, ok := kinds[kind]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("brokerbench cannot run %q locally; it runs: %s", kind, strings.Join(LocalKinds(), ", "))
	}
	if port == 0 {
		port = l.Port
	}
	return l.New(port, brokers), nil
}

// MetricsReader returns the reader of a node's metrics endpoint given
// as rawURL: that of the broker whose endpoints have its form, else the
// Prometheus text format's.
func MetricsReader(rawURL string) brokermetrics.Reader {
	u, err := url.Parse(rawURL)
	if err != nil {
		return brokermetrics.Prometheus
	}
	for _, m := range Modules() {
		if s := m.Metrics; s != nil && s.Serves != nil && s.Read != nil && s.Serves(u) {
			return s.Read
		}
	}
	return brokermetrics.Prometheus
}
