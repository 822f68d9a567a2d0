// Package pulsar is the Apache Pulsar driver, on pulsar-client-go with
// the broker's admin REST API for topics.
//
// A topic is a persistent partitioned topic of the configured namespace
// (namespacePrefix, created when missing), each partition a lane of
// order. Creating the first topic applies the namespace's policies as
// OMB's driver does: persistence (ensemble, write and ack quorums; by
// default from the replication factor), broker-side deduplication
// (persistence.deduplicationEnabled: producers then carry a name of
// their own and the client's sequence ids, so the broker drops resent
// duplicates) and an unlimited backlog. A producer sends asynchronously,
// batching as configured; a subscription is a Pulsar subscription of the
// configured type whose consumers acknowledge each message after the
// runner consumed it. Subscriptions start at the earliest message or the
// latest, as the runner asks. The written count is the topic's message-in
// counter (none with deduplication on, see New), and a re-read is a
// reader per partition from its earliest message.
//
// The client dials brokers itself: driver.Options.Hosts does not apply.
package pulsar

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// Driver talks to one Pulsar cluster. It is safe for concurrent use.
type Driver struct {
	cfg   *config
	admin *admin
	// metrics receives the clients' metrics, kept out of the process's
	// default registry.
	metrics *prometheus.Registry

	mu     sync.Mutex
	client pulsar.Client // consumers' and readers' client, made on first use
	// namespaceReady is set once the namespace exists with its policies.
	namespaceReady bool

	// failoverMu guards failoverDelay, the broker's delay of a Failover
	// subscription's first read, and failoverRead, set once it is read.
	failoverMu    sync.Mutex
	failoverDelay time.Duration
	failoverRead  bool
}

var (
	_ driver.Driver                  = (*Driver)(nil)
	_ driver.ResettingWrittenCounter = (*Driver)(nil)
	_ driver.Rereader                = (*Driver)(nil)
	_ driver.HostPlacement           = (*Driver)(nil)
)

// New validates dc; connections are made on first use. With
// deduplication on, the driver counts no written messages: the broker's
// message-in counter also counts the resends deduplication dropped, so
// the run is accounted by its acknowledgements rather than by a count
// that would show more messages stored than were sent.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	adm, err := newAdmin(cfg)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, admin: adm, metrics: prometheus.NewRegistry()}
	if cfg.dedup {
		return uncounted{d, d, d, d}, nil
	}
	return d, nil
}

// uncounted is a driver without its driver.WrittenCounter.
type uncounted struct {
	driver.Driver
	driver.Rereader
	driver.Checker
	driver.HostPlacement
}

// newClient returns a client of the service URL whose producers may
// hold memoryLimit bytes unacknowledged.
func (d *Driver) newClient(memoryLimit int64) (pulsar.Client, error) {
	o := pulsar.ClientOptions{
		URL:                     d.cfg.serviceURL,
		MaxConnectionsPerBroker: d.cfg.connectionsPerBroker,
		MemoryLimitBytes:        memoryLimit,
		TLSConfig:               d.cfg.tls, // used as it is, over pulsar+ssl://
		Logger:                  pulsarlog.DefaultNopLogger(),
		MetricsRegisterer:       d.metrics,
	}
	if d.cfg.authPlugin != "" {
		a, err := pulsar.NewAuthentication(d.cfg.authPlugin, d.cfg.authData)
		if err != nil {
			return nil, err
		}
		o.Authentication = a
	}
	cl, err := pulsar.NewClient(o)
	if err != nil {
		return nil, fmt.Errorf("pulsar client of %s: %w", driver.RedactEndpoints(d.cfg.serviceURL), err)
	}
	return cl, nil
}

// sharedClient returns the client of consumers and readers.
func (d *Driver) sharedClient() (pulsar.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client == nil {
		cl, err := d.newClient(d.cfg.memoryLimit)
		if err != nil {
			return nil, err
		}
		d.client = cl
	}
	return d.client, nil
}

// unreachable explains a failed admin call: a refusal of the
// credentials or certificate, or a broker that does not answer.
func (d *Driver) unreachable(err error) error {
	if hasStatus(err, http.StatusUnauthorized) || hasStatus(err, http.StatusForbidden) {
		return driver.Refused(fmt.Errorf("pulsar admin API at %s: %w: check authentication.plugin and authentication.data", d.admin.base, err))
	}
	if advice := driver.TLSAdvice(err); advice != "" {
		return driver.Refused(fmt.Errorf("pulsar admin API at %s: %w: %s (tlsTrustStore, tlsVerifyHostname, tls)", d.admin.base, err, advice))
	}
	return fmt.Errorf("pulsar admin API at %s: %w (is the broker running, and is httpUrl its admin port?)", d.admin.base, err)
}

// clientError explains err, the client's failure to make a producer or
// a consumer: the Go client reports a broker refusing its credentials or
// its certificate as a connection error, retried until its operation
// timeout (30 s); the admin API, which takes the same credentials and
// TLS settings, tells a refusal (driver.ErrRefused, with what to check)
// apart from a broker that does not answer.
func (d *Driver) clientError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if _, aerr := d.BrokerVersion(ctx); errors.Is(aerr, driver.ErrRefused) {
		return driver.Refused(fmt.Errorf("%w; the admin API refuses the same settings: %v", err, aerr))
	}
	return err
}

// BrokerVersion implements driver.Driver: the version the admin API
// reports.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	var v string
	if err := d.admin.do(ctx, http.MethodGet, "/admin/v2/brokers/version", nil, &v); err != nil {
		return "", d.unreachable(err)
	}
	return "Apache Pulsar " + v, nil
}

// topicName is the full name of a topic of the driver's namespace.
func (d *Driver) topicName(topic string) string {
	return "persistent://" + d.cfg.tenant + "/" + d.cfg.namespace + "/" + topic
}

// prepareNamespace creates the tenant and the namespace when missing and
// sets the namespace's policies, once per driver.
func (d *Driver) prepareNamespace(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.namespaceReady {
		return nil
	}
	c := d.cfg
	var tenants []string
	if err := d.admin.do(ctx, http.MethodGet, "/admin/v2/tenants", nil, &tenants); err != nil {
		return d.unreachable(err)
	}
	if !contains(tenants, c.tenant) {
		clusters := c.clusters
		if clusters == nil {
			if err := d.admin.do(ctx, http.MethodGet, "/admin/v2/clusters", nil, &clusters); err != nil {
				return fmt.Errorf("list clusters for tenant %q: %w", c.tenant, err)
			}
		}
		body := map[string]any{"adminRoles": []string{}, "allowedClusters": clusters}
		if err := d.admin.do(ctx, http.MethodPut, "/admin/v2/tenants/"+c.tenant, body, nil); err != nil && !hasStatus(err, http.StatusConflict) {
			return fmt.Errorf("create tenant %q: %w", c.tenant, err)
		}
	}
	ns := namespacePath(c.tenant, c.namespace)
	if err := d.admin.do(ctx, http.MethodPut, ns, nil, nil); err != nil && !hasStatus(err, http.StatusConflict) {
		return fmt.Errorf("create namespace %s/%s: %w", c.tenant, c.namespace, err)
	}
	policies := []struct {
		what, path string
		body       any
	}{
		{"persistence", ns + "/persistence", map[string]any{
			"bookkeeperEnsemble": c.persistence.ensemble, "bookkeeperWriteQuorum": c.persistence.write,
			"bookkeeperAckQuorum": c.persistence.ack, "managedLedgerMaxMarkDeleteRate": 1.0}},
		{"deduplication", ns + "/deduplication", c.dedup},
		{"backlog quota", ns + "/backlogQuota?backlogQuotaType=destination_storage", map[string]any{
			"limitSize": -1, "limitTime": -1, "policy": "producer_exception"}},
	}
	for _, p := range policies {
		if err := d.admin.do(ctx, http.MethodPost, p.path, p.body, nil); err != nil {
			return fmt.Errorf("set the %s policy of namespace %s/%s: %w", p.what, c.tenant, c.namespace, err)
		}
	}
	d.namespaceReady = true
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CreateTopic implements driver.Driver: a partitioned topic of
// spec.Partitions partitions (at least 1). spec.Config must be empty: a
// topic takes its settings from its namespace's policies.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if !validName(spec.Name) {
		return fmt.Errorf("create topic %q: Pulsar topic names hold letters, digits, '-', '_', '.', '=' and ':' only", spec.Name)
	}
	if len(spec.Config) > 0 {
		return fmt.Errorf("create topic %q: the Pulsar driver takes no topic settings (got %s): set the namespace's policies in commonConfig", spec.Name, spec.Config[0].Key)
	}
	if err := d.prepareNamespace(ctx); err != nil {
		return err
	}
	parts := max(spec.Partitions, 1)
	if err := d.admin.do(ctx, http.MethodPut, topicPath(d.cfg.tenant, d.cfg.namespace, spec.Name)+"/partitions", parts, nil); err != nil {
		return fmt.Errorf("create topic %q (%d partitions): %w", spec.Name, parts, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver: the topic with its partitions,
// subscriptions and messages, also while clients are connected to it.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	path := topicPath(d.cfg.tenant, d.cfg.namespace, name)
	err := d.admin.do(ctx, http.MethodDelete, path+"/partitions?force=true", nil, nil)
	if hasStatus(err, http.StatusNotFound) {
		// Not partitioned, or not there at all.
		err = d.admin.do(ctx, http.MethodDelete, path+"?force=true", nil, nil)
		if hasStatus(err, http.StatusNotFound) {
			return fmt.Errorf("delete topic %q: %w: %w", name, driver.ErrTopicNotFound, err)
		}
	}
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// partitions returns how many partitions a topic has: 0 for a topic
// that is not partitioned (or does not exist).
func (d *Driver) partitions(ctx context.Context, topic string) (int, error) {
	var md struct {
		Partitions int `json:"partitions"`
	}
	if err := d.admin.do(ctx, http.MethodGet, topicPath(d.cfg.tenant, d.cfg.namespace, topic)+"/partitions", nil, &md); err != nil {
		return 0, fmt.Errorf("read the partitions of topic %q: %w", topic, err)
	}
	return md.Partitions, nil
}

// Written implements driver.WrittenCounter: the topic's message-in
// counter, summed over its partitions. The broker keeps it in memory
// for each topic it serves: a topic a broker loaded again (after a
// restart, or moved to another broker) counts from zero there.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	path := topicPath(d.cfg.tenant, d.cfg.namespace, topic) + "/stats"
	if parts > 0 {
		path = topicPath(d.cfg.tenant, d.cfg.namespace, topic) + "/partitioned-stats"
	}
	var raw json.RawMessage
	if err := d.admin.do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		return 0, fmt.Errorf("read the stats of topic %q: %w", topic, err)
	}
	s, err := parseStats(raw)
	if err != nil {
		return 0, fmt.Errorf("topic %q: %w", topic, err)
	}
	return s.MsgInCounter, nil
}

// WrittenResets implements driver.ResettingWrittenCounter: the
// message-in counter lives in the memory of the broker serving the
// topic, so a run that kills or restarts brokers cannot use it (a killed
// broker's topics counted again from zero on another broker, and a
// restarted one counted the client's resends).
func (d *Driver) WrittenResets() bool { return true }

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		d.client.Close()
		d.client = nil
	}
	d.admin.hc.CloseIdleConnections()
}

// lane returns the partition of a message, from its id; a topic that is
// not partitioned is lane 0.
func lane(id pulsar.MessageID) int32 {
	return max(id.PartitionIdx(), 0)
}

// LeaderHost implements driver.HostPlacement: the host of the broker
// that owns the partition (the broker a lookup of it names).
func (d *Driver) LeaderHost(ctx context.Context, topic string, partition int) (string, error) {
	n, err := d.partitions(ctx, topic)
	if err != nil {
		return "", err
	}
	name := topic
	switch {
	case partition < 0 || partition >= max(n, 1):
		return "", fmt.Errorf("topic %q has no partition %d", topic, partition)
	case n > 0:
		name += "-partition-" + strconv.Itoa(partition)
	}
	var owner struct {
		BrokerURL    string `json:"brokerUrl"`
		BrokerURLTLS string `json:"brokerUrlTls"`
	}
	path := "/lookup/v2/topic/persistent/" + url.PathEscape(d.cfg.tenant) + "/" + url.PathEscape(d.cfg.namespace) + "/" + url.PathEscape(name)
	if err := d.admin.do(ctx, http.MethodGet, path, nil, &owner); err != nil {
		return "", fmt.Errorf("look up the broker of topic %q: %w", name, err)
	}
	return urlHost(cmp.Or(owner.BrokerURL, owner.BrokerURLTLS), "the lookup of topic "+name)
}

// ControllerHost implements driver.HostPlacement: the host of the leader
// broker, which runs the cluster's load manager.
func (d *Driver) ControllerHost(ctx context.Context) (string, error) {
	var leader struct {
		ServiceURL string `json:"serviceUrl"`
	}
	if err := d.admin.do(ctx, http.MethodGet, "/admin/v2/brokers/leaderBroker", nil, &leader); err != nil {
		return "", fmt.Errorf("ask for the leader broker: %w", err)
	}
	return urlHost(leader.ServiceURL, "the leader broker's answer")
}

// urlHost returns the host of a broker's URL, which where names.
func urlHost(s, where string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("%s names no broker: %q", where, s)
	}
	return u.Hostname(), nil
}

// partitionTopics returns the full names of a topic's partitions, or
// the topic's own for one that is not partitioned.
func (d *Driver) partitionTopics(ctx context.Context, topic string) ([]string, error) {
	n, err := d.partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return []string{d.topicName(topic)}, nil
	}
	names := make([]string, n)
	for i := range names {
		names[i] = d.topicName(topic) + "-partition-" + strconv.Itoa(i)
	}
	return names, nil
}

// sendError gives send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// resultKinds name the Pulsar client's results a send can fail with.
var resultKinds = map[pulsar.Result]string{
	pulsar.TimeoutError: "TIMEOUT", pulsar.ConnectError: "CONNECT", pulsar.NotConnectedError: "NOT_CONNECTED",
	pulsar.ProducerQueueIsFull: "QUEUE_FULL", pulsar.ClientMemoryBufferIsFull: "MEMORY_BUFFER_FULL",
	pulsar.MessageTooBig: "MESSAGE_TOO_BIG", pulsar.ProducerClosed: "PRODUCER_CLOSED", pulsar.TopicNotFound: "TOPIC_NOT_FOUND",
	pulsar.TopicTerminated: "TOPIC_TERMINATED", pulsar.ProducerBlockedQuotaExceededException: "QUOTA_EXCEEDED",
	pulsar.ProducerBlockedQuotaExceededError: "QUOTA_EXCEEDED", pulsar.BrokerPersistenceError: "PERSISTENCE",
	pulsar.AuthenticationError: "AUTHENTICATION", pulsar.AuthorizationError: "AUTHORIZATION", pulsar.ProducerFenced: "PRODUCER_FENCED",
}

// Kind names the error: the Pulsar client's result.
func (e sendError) Kind() string {
	var pe *pulsar.Error
	switch {
	case errors.As(e.err, &pe):
		if k, ok := resultKinds[pe.Result()]; ok {
			return k
		}
		return "PULSAR_RESULT_" + strconv.Itoa(int(pe.Result()))
	case errors.Is(e.err, context.Canceled):
		return "CANCELED"
	case errors.Is(e.err, context.DeadlineExceeded):
		return "TIMEOUT"
	default:
		return "OTHER"
	}
}
