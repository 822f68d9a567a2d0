// Package rocketmq is the Apache RocketMQ 5 driver: messages over the
// proxy's gRPC protocol (rocketmq-clients' Go client), administration
// over the name servers' and brokers' remoting protocol (as mqadmin and
// OMB's driver do it), and the local node brokerbench starts: a name
// server, and a broker with its proxy in local mode.
//
// A topic is created on every broker of the configured cluster with
// partitionsPerTopic queues each, of the NORMAL message type (DELAY with
// sendDelayMsg), as OMB's driver creates it. A producer sends each
// message asynchronously and is acknowledged when the proxy answers that
// the broker stored it; the client picks the queue of each message in
// turn, and a message's key is its RocketMQ key (indexed, not a queue
// choice). A subscription is a consumer group named after the topic and
// the subscription, as OMB names it; its consumers are simple consumers
// that receive batches (the broker's pop consumption) and acknowledge
// each message after the runner consumed it. A message not acknowledged
// within invisibleDurationMs is delivered again. No order is promised:
// a producer's sends are concurrent calls, stored as they arrive. A new
// group starts at each queue's oldest message or its newest, as the
// runner asks: the driver commits the group's offsets before its first
// consumer receives. The written count is the sum of the queues' maximum
// offsets.
//
// The client dials the proxy itself: driver.Options.Hosts does not apply.
package rocketmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
	quietClientLog()
	connectVia := rmq.NewRpcClient
	rmq.NewRpcClient = func(target string, opts ...rmq.RpcClientOption) (rmq.RpcClient, error) {
		return connectVia(target, append(opts, rmq.WithRpcClientConnOption(connections.options(target)...))...)
	}
}

// quietClientLog keeps the client's own log (by default a file under
// "/logs", at level info) to its errors, in a directory of the system's
// temporary one, unless the environment names one
// (rocketmq.client.logRoot): the driver reports what fails through its
// acknowledgements and errors.
func quietClientLog() {
	if _, set := os.LookupEnv(rmq.CLIENT_LOG_ROOT); set {
		return
	}
	_ = os.Setenv(rmq.CLIENT_LOG_ROOT, filepath.Join(os.TempDir(), "brokerbench-rocketmq-client"))
	_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "error")
	rmq.ResetLogger()
}

// connectionSettings are the TLS settings of the proxies drivers connect
// to, by address. The Go client (v5.1.2) gives its connections no
// options of their own: each is made through its NewRpcClient, which
// the package wraps to add them. A proxy's route may name it by another
// address than the one configured: such a connection takes the settings
// of the last driver made. It is safe for concurrent use.
type connectionSettings struct {
	mu     sync.Mutex
	byAddr map[string]*tls.Config // nil: plaintext
	last   *tls.Config
}

var connections = &connectionSettings{byAddr: map[string]*tls.Config{}}

// set records the TLS config (nil: plaintext) of the proxies at addrs.
func (cs *connectionSettings) set(addrs []string, cfg *tls.Config) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, a := range addrs {
		cs.byAddr[a] = cfg
	}
	cs.last = cfg
}

// options returns the connection options of the proxy at target: no
// per-call log (the client's default logs every call to a file), and TLS
// as configured or plaintext.
func (cs *connectionSettings) options(target string) []rmq.ConnOption {
	cs.mu.Lock()
	cfg, ok := cs.byAddr[strings.TrimPrefix(target, "ipv4:")]
	if !ok {
		cfg = cs.last
	}
	cs.mu.Unlock()
	opts := []rmq.ConnOption{rmq.WithZapLogger(zap.NewNop())}
	if cfg == nil {
		return append(opts, rmq.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	return append(opts, rmq.WithTLSConfig(cfg))
}

// Driver talks to one RocketMQ cluster through its proxies and name
// servers. It is safe for concurrent use.
type Driver struct {
	cfg   *config
	admin *admin

	mu sync.Mutex
	// groups are the consumer groups the driver created, by topic, for
	// DeleteTopic to delete with it.
	groups map[string][]string
	// holders are the brokers that hold each topic the driver created,
	// which Written must find in its route.
	holders map[string][]string
}

var (
	_ driver.Driver         = (*Driver)(nil)
	_ driver.WrittenCounter = (*Driver)(nil)
	_ driver.Checker        = (*Driver)(nil)
	_ driver.HostPlacement  = (*Driver)(nil)
)

// New validates dc; connections are made on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	proxies, _ := splitAddrs(cfg.grpcEndpoint)
	connections.set(proxies, cfg.tls)
	return &Driver{cfg: cfg, admin: &admin{namesrv: cfg.namesrv, cluster: cfg.cluster, dial: opts.Dial,
		accessKey: cfg.adminKey, secretKey: cfg.adminSecret}, groups: map[string][]string{}, holders: map[string][]string{}}, nil
}

// clientConfig is the Go client's config, of a consumer group or none.
func (d *Driver) clientConfig(group string) *rmq.Config {
	return &rmq.Config{Endpoint: d.cfg.grpcEndpoint, ConsumerGroup: group,
		Credentials: &credentials.SessionCredentials{AccessKey: d.cfg.accessKey, AccessSecret: d.cfg.secretKey}}
}

// newClient is the Go client's constructor of producers and consumers,
// with the configured request timeout.
func (d *Driver) newClient(c *rmq.Config, opts ...rmq.ClientOption) (rmq.Client, error) {
	return rmq.NewClient(c, append(opts, rmq.WithQueryRouteTimeout(d.cfg.timeout))...)
}

// unreachable explains a failed administration call: a cluster of no
// broker is an input error (clusterName is wrong).
func (d *Driver) unreachable(err error) error {
	if errors.Is(err, errNoCluster) {
		return fmt.Errorf("%w: %v (OMB's driver file gives a placeholder: name the cluster the brokers register, in clusterName or as %sNAME among the --broker addresses; or run on the local cluster with --local-brokers N, whose name replaces it)", workload.ErrInvalid, err, clusterScheme)
	}
	return fmt.Errorf("rocketmq cluster %q: %w (are the name servers %s running, and is namesrvAddr theirs?)",
		d.cfg.cluster, err, strings.Join(d.cfg.namesrv, ";"))
}

// BrokerVersion implements driver.Driver: the release the cluster's
// first broker reports.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	r, err := d.admin.brokers(ctx)
	if err != nil {
		return "", d.unreachable(err)
	}
	for _, addr := range r.masters() {
		info, err := d.admin.runtimeInfo(ctx, addr)
		if err != nil {
			return "", err
		}
		return "Apache RocketMQ " + releaseName(info["brokerVersionDesc"]), nil
	}
	return "", d.unreachable(errors.New("no broker"))
}

// releaseName turns RocketMQ's version constant (V5_3_3) into a release
// (5.3.3).
func releaseName(desc string) string {
	return strings.ReplaceAll(strings.TrimPrefix(desc, "V"), "_", ".")
}

// messageType is the message type of the driver's topics.
func (d *Driver) messageType() string {
	if d.cfg.delay > 0 {
		return "DELAY"
	}
	return "NORMAL"
}

// CreateTopic implements driver.Driver: spec.Partitions queues (at
// least 1) on every broker of the cluster. spec.Config must be empty.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if !validName(spec.Name) {
		return fmt.Errorf("create topic %q: RocketMQ topic names hold up to 127 letters, digits, '%%', '|', '-' and '_'", spec.Name)
	}
	if len(spec.Config) > 0 {
		return fmt.Errorf("create topic %q: the RocketMQ driver takes no topic settings (got %s)", spec.Name, spec.Config[0].Key)
	}
	holders, err := d.admin.createTopic(ctx, spec.Name, max(spec.Partitions, 1), d.messageType())
	if err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	d.mu.Lock()
	d.holders[spec.Name] = holders
	d.mu.Unlock()
	return nil
}

// DeleteTopic implements driver.Driver: the topic on every broker that
// has it, and its route on the name servers; the consumer groups the
// driver created for it go with it.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	if r, err := d.admin.route(ctx, name); err == nil {
		d.mu.Lock()
		groups := d.groups[name]
		delete(d.groups, name)
		delete(d.holders, name)
		d.mu.Unlock()
		for _, g := range groups {
			for _, addr := range r.masters() {
				if err := d.admin.deleteGroup(ctx, addr, g); err != nil {
					return fmt.Errorf("delete topic %q: its consumer group %q: %w", name, g, err)
				}
			}
		}
	}
	err := d.admin.deleteTopic(ctx, name)
	if errors.Is(err, errNoTopic) {
		return fmt.Errorf("delete topic %q: %w: %w", name, driver.ErrTopicNotFound, err)
	}
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// Written implements driver.WrittenCounter: the sum of the maximum
// offsets of the topic's queues, each the number of messages ever
// written to it. A broker that held the topic when the driver created
// it and is no longer routed (it is down: the name servers forget a
// broker whose connection closes) makes it an error, not a count
// without that broker's messages.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	r, err := d.admin.route(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("written count of topic %q: %w", topic, err)
	}
	d.mu.Lock()
	holders := d.holders[topic]
	d.mu.Unlock()
	masters := r.masters()
	for _, b := range holders {
		if _, ok := masters[b]; !ok {
			return 0, fmt.Errorf("written count of topic %q: broker %s, which holds queues of it, is not routed by the name servers (is it down?)", topic, b)
		}
	}
	var sum int64
	for _, q := range r.queues() {
		n, err := d.admin.offset(ctx, topic, q, false)
		if err != nil {
			return 0, fmt.Errorf("written count of topic %q: %w", topic, err)
		}
		sum += n
	}
	return sum, nil
}

// LeaderHost implements driver.HostPlacement: the host of the master
// broker holding the topic's queue number partition, counting the
// queues of its route in order of broker name, then queue id (with
// partitionsPerTopic queues on each broker, partition 0 is the first
// broker's first queue), as the name servers route it when asked.
func (d *Driver) LeaderHost(ctx context.Context, topic string, partition int) (string, error) {
	r, err := d.admin.route(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("the broker of topic %q queue %d: %w", topic, partition, err)
	}
	qs := r.queues()
	if partition < 0 || partition >= len(qs) {
		return "", fmt.Errorf("topic %q has no queue %d: its route has %d", topic, partition, len(qs))
	}
	host, _, err := net.SplitHostPort(qs[partition].addr)
	if err != nil {
		return "", fmt.Errorf("the route of topic %q names broker %s at %q: %w", topic, qs[partition].broker, qs[partition].addr, err)
	}
	return host, nil
}

// errNoController is ControllerHost's answer.
var errNoController = errors.New("a RocketMQ cluster of master brokers has no leading broker: each serves its own queues, and the name servers, which route clients to them, lead nothing; aim the fault at a node id, leader or random")

// ControllerHost implements driver.HostPlacement: there is none
// (errNoController).
func (d *Driver) ControllerHost(context.Context) (string, error) { return "", errNoController }

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver: producers and consumers are closed by
// their own Close.
func (d *Driver) Close() {}

// sendError gives send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error: the proxy's status code, or the gRPC call's.
func (e sendError) Kind() string {
	var rs *rmq.ErrRpcStatus
	switch st, isGRPC := status.FromError(e.err); {
	case errors.As(e.err, &rs):
		return fmt.Sprintf("STATUS_%d", rs.GetCode())
	case isGRPC:
		return "GRPC_" + strings.ToUpper(st.Code().String())
	case errors.Is(e.err, context.Canceled):
		return "CANCELED"
	case errors.Is(e.err, context.DeadlineExceeded):
		return "TIMEOUT"
	default:
		return "OTHER"
	}
}
