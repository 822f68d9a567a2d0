// Package rabbitmq is brokerbench's RabbitMQ: its AMQP 0-9-1 driver, on
// amqp091-go; the local clusters brokerbench starts (Kind), which serve
// the Streams driver of package rabbitmq/stream and the AMQP 1.0 driver
// of package rabbitmq/amqp10 too; and the module that registers them
// (module.go).
//
// A topic is a durable direct exchange of the same name. A subscription
// is one queue per partition, SUBSCRIPTION.0 to SUBSCRIPTION.N-1, bound
// to the exchange with the partition's number as routing key; every
// subscription therefore receives every message. A producer picks the
// partition by key hash, or in turn without a key. The topic's partition
// count and its subscriptions are kept as messages of a queue of its own,
// TOPIC.bb-meta, so that every process can find them.
//
// Producers publish with publisher confirms (a confirm acknowledges a
// message; a nack or a return fails it) and the mandatory flag, so that a
// message no queue takes is failed as UNROUTABLE rather than counted as
// sent. Consumers take messages with a prefetch limit and acknowledge
// them after the runner consumed them, several at once (multiple acks).
// Each producer and each consumer has its own connection; after losing
// it, they connect at once to the next address of the cluster that
// answers.
package rabbitmq

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/pki"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// LocalListener names the listener of a local RabbitMQ a config connects
// to: "amqps" with tls: true, else "amqp".
func LocalListener(dc *workload.DriverConfig) string {
	if v, _ := dc.Common.Get("tls"); v == "true" {
		return "amqps"
	}
	return "amqp"
}

// settings are the driver's settings by section, with their defaults.
var settings = map[string]map[string]string{
	"common": {
		"amqpUris": "amqp://guest:guest@127.0.0.1:5672/", // comma-separated; clients use them in turn
		// OMB's RabbitMQ driver file.
		"messagePersistence": "false", "queueType": "CLASSIC",
		"producerCreationDelay": "", "producerCreationBatchSize": "", "consumerCreationDelay": "", "consumerCreationBatchSize": "",
		// PLAIN: the URI's user and password; EXTERNAL: the client
		// certificate of tlsKeyStore names the user.
		"saslMechanism": "PLAIN",
	},
	"topic":    {},
	"producer": {"maxOutstandingConfirms": "0", "mandatory": "true"}, // 0: as many as the runner keeps in flight
	"consumer": {"prefetch": "1000", "multipleAckEvery": "50"},
}

// queueTypes maps OMB's queue types to RabbitMQ's x-queue-type.
var queueTypes = map[string]string{"CLASSIC": "classic", "QUORUM": "quorum", "STREAM": "stream"}

type config struct {
	uris                   []string
	persistent, mandatory  bool
	queueType              string
	replicas               int
	maxOutstanding         int
	prefetch, multipleAcks int
	// producerPace and consumerPace pace client creation (nil: not).
	producerPace, consumerPace *pacer
	effective                  map[string]workload.Properties
	tls                        *tls.Config           // nil: no amqps URI
	sasl                       []amqp.Authentication // nil: the URIs' user and password
}

// parseConfig validates every setting of dc; local are the credentials of
// a local cluster brokerbench secured, used for addresses given without.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "RabbitMQ", settings)
	c := &config{replicas: dc.ReplicationFactor}
	raw := strings.Split(s.String("common", "amqpUris"), ",")
	if len(endpoints) > 0 {
		raw = endpoints
	}
	scheme := "amqp"
	if s.Bool("common", "tls") {
		scheme = "amqps"
	}
	userinfo := url.UserPassword("guest", "guest")
	if local != nil {
		userinfo = url.UserPassword(local.Username, local.Password)
	}
	amqps := false
	for _, u := range raw {
		u = strings.TrimSpace(u)
		if !strings.Contains(u, "://") {
			u = (&url.URL{Scheme: scheme, User: userinfo, Host: u, Path: "/"}).String()
		}
		amqps = amqps || strings.HasPrefix(u, "amqps://")
		if _, err := amqp.ParseURI(u); err != nil {
			s.Fail("common", "amqpUris", "%s: %v (expected amqp://user:password@host:port/vhost)", driver.RedactEndpoints(u), err)
		}
		c.uris = append(c.uris, u)
	}
	c.tls = driver.ClientTLS(s, amqps, local)
	switch m := strings.ToUpper(s.String("common", "saslMechanism")); m {
	case "PLAIN":
	case "EXTERNAL":
		if c.tls != nil && len(c.tls.Certificates) == 0 && local != nil && local.CertFile != "" {
			// The local cluster's client certificate names its user.
			cert, err := pki.ReadKeyStore(local.CertFile, pki.TypePEM, "", "")
			if err != nil {
				s.Fail("common", "saslMechanism", "the local cluster's client certificate: %v", err)
			}
			c.tls.Certificates = []tls.Certificate{cert}
		}
		if c.tls == nil || len(c.tls.Certificates) == 0 {
			s.Fail("common", "saslMechanism", "EXTERNAL authenticates by the client certificate: it needs amqps URIs (or tls: true) and tlsKeyStore")
		}
		c.sasl = []amqp.Authentication{&amqp.ExternalAuth{}}
	default:
		s.Fail("common", "saslMechanism", "must be PLAIN or EXTERNAL, got %q", m)
	}
	c.persistent = s.Bool("common", "messagePersistence")
	c.mandatory = s.Bool("producer", "mandatory")
	qt := strings.ToUpper(s.String("common", "queueType"))
	c.queueType = queueTypes[qt]
	if c.queueType == "" {
		s.Fail("common", "queueType", "must be CLASSIC, QUORUM or STREAM, got %q", qt)
	}
	if c.queueType == "classic" && c.replicas > 1 {
		s.Fail("common", "queueType", "classic queues keep one copy (mirroring is deprecated), but the replication factor is %d: use queueType QUORUM or STREAM, or replicationFactor 1", c.replicas)
	}
	c.producerPace = creationPace(s, dc.Format, "producer")
	c.consumerPace = creationPace(s, dc.Format, "consumer")
	c.maxOutstanding = s.Int("producer", "maxOutstandingConfirms", 0)
	c.prefetch = s.Int("consumer", "prefetch", 1)
	c.multipleAcks = s.Int("consumer", "multipleAckEvery", 1)
	if c.multipleAcks > c.prefetch {
		s.Fail("consumer", "multipleAckEvery", "must not exceed prefetch (%d): the broker would stop delivering before an ack is due", c.prefetch)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective("amqpUris", "tlsTrustStorePassword", "tlsKeyStorePassword")
	redacted := make([]string, len(c.uris))
	for i, u := range c.uris {
		redacted[i] = driver.RedactEndpoints(u)
	}
	c.effective["common"] = append(workload.Properties{{Key: "amqpUris", Value: strings.Join(redacted, ",")}}, c.effective["common"]...)
	return c, nil
}

// Driver connects to one RabbitMQ cluster.
type Driver struct {
	cfg  *config
	opts driver.Options
	next atomic.Uint64 // the next client's URI, in turn

	mu        sync.Mutex
	admin     *amqp.Connection
	adminAt   int            // the index of the admin connection's URI
	consumers map[string]int // consumers created per topic and subscription, for lanes
}

var _ driver.Pauser = (*consumer)(nil)

// OMB's RabbitMQ driver's pacing of client creation when its file
// gives none: batches of 5, 100 ms apart.
const (
	ombCreationBatchSize = 5
	ombCreationDelay     = 100 * time.Millisecond
)

// creationPace returns the pacing of the creation of role's clients
// ("producer" or "consumer"), from ROLECreationBatchSize and
// ROLECreationDelay (ms). An OMB driver file that gives neither gets
// OMB's defaults, as OMB's driver would use; a file of brokerbench's
// own format that gives neither creates its clients at once.
func creationPace(s *driver.Settings, format workload.Format, role string) *pacer {
	sizeKey, delayKey := role+"CreationBatchSize", role+"CreationDelay"
	if s.String("common", sizeKey) == "" && s.String("common", delayKey) == "" && format != workload.OMB {
		return nil
	}
	p := &pacer{size: ombCreationBatchSize, delay: ombCreationDelay}
	if s.String("common", sizeKey) != "" {
		p.size = s.Int("common", sizeKey, 1)
	}
	if s.String("common", delayKey) != "" {
		p.delay = time.Duration(s.Int("common", delayKey, 0)) * time.Millisecond
	}
	return p
}

// New validates dc; connections are made on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, opts: opts, consumers: map[string]int{}}, nil
}

// handshakeTimeout bounds a connection's handshake with one address:
// a node that takes connections but does not answer (a stopped or
// overloaded node) costs the failover that long, not the whole run.
const handshakeTimeout = 5 * time.Second

// dial connects to the cluster: to the next URI in turn, so that clients
// spread over the nodes, or to the first after it that answers.
func (d *Driver) dial(ctx context.Context, name string) (*amqp.Connection, error) {
	conn, _, err := d.dialFrom(ctx, name, int(d.next.Add(1)-1))
	return conn, err
}

// dialFrom connects to the first URI that answers, trying each once in
// turn from index from, and returns the connection and the index of its
// URI. A refusal of the credentials or certificate ends the attempts: the
// other nodes would refuse them too.
func (d *Driver) dialFrom(ctx context.Context, name string, from int) (*amqp.Connection, int, error) {
	var conn *amqp.Connection
	at, err := inTurn(len(d.cfg.uris), from, func(i int) error {
		var err error
		conn, err = d.dialURI(ctx, name, d.cfg.uris[i])
		if err == nil || errors.Is(err, driver.ErrRefused) || ctx.Err() != nil {
			return stopTrying{err}
		}
		return err
	})
	return conn, at, err
}

// stopTrying ends inTurn's attempts with its error (nil: success).
type stopTrying struct{ err error }

func (s stopTrying) Error() string { return s.err.Error() }

// inTurn calls try with the indexes of n addresses, from from on (mod n),
// until one succeeds or says to stop (stopTrying), or all failed. It
// returns the index of the last one tried, and its error, or all their
// errors when every one failed.
func inTurn(n, from int, try func(i int) error) (int, error) {
	var errs []error
	from = (from%n + n) % n
	for k := range n {
		i := (from + k) % n
		err := try(i)
		if st, ok := err.(stopTrying); ok {
			return i, st.err
		}
		if err == nil {
			return i, nil
		}
		errs = append(errs, err)
	}
	return (from + n - 1) % n, errors.Join(errs...)
}

// dialURI opens a connection to one URI.
func (d *Driver) dialURI(ctx context.Context, name, uri string) (*amqp.Connection, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("brokerbench " + name)
	cfg := amqp.Config{Heartbeat: 10 * time.Second, Locale: "en_US", Properties: props, SASL: d.cfg.sasl,
		Dial: func(network, addr string) (net.Conn, error) {
			dctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
			defer cancel()
			conn, err := d.opts.Dial(dctx, network, addr)
			if err == nil {
				// Cleared by the client once the connection is open.
				err = conn.SetDeadline(time.Now().Add(handshakeTimeout))
			}
			return conn, err
		}}
	if d.cfg.tls != nil {
		// amqp091 names the server in the config it is given: a copy.
		cfg.TLSClientConfig = d.cfg.tls.Clone()
	}
	conn, err := amqp.DialConfig(uri, cfg)
	if err != nil {
		err = fmt.Errorf("RabbitMQ at %s: %w", redactedHost(uri), err)
		switch {
		case errors.Is(err, amqp.ErrCredentials), errors.Is(err, amqp.ErrSASL):
			return nil, driver.Refused(fmt.Errorf("%w: check the user and password in amqpUris, or saslMechanism", err))
		case driver.TLSAdvice(err) != "":
			return nil, driver.Refused(fmt.Errorf("%w: %s (tlsTrustStore, tlsVerifyHostname, amqps://)", err, driver.TLSAdvice(err)))
		}
		return nil, err
	}
	return conn, nil
}

// redactedHost is a URI's host, for errors.
func redactedHost(uri string) string {
	if u, err := url.Parse(uri); err == nil {
		return u.Host
	}
	return "(unparsable URI)"
}

// channel opens a channel on the driver's admin connection, connecting
// again if it was lost.
func (d *Driver) channel(ctx context.Context) (*amqp.Channel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.admin == nil || d.admin.IsClosed() {
		// After losing a connection, the next node first.
		from := int(d.next.Add(1) - 1)
		if d.admin != nil {
			from = d.adminAt + 1
		}
		conn, at, err := d.dialFrom(ctx, "admin", from)
		if err != nil {
			return nil, err
		}
		d.admin, d.adminAt = conn, at
	}
	return d.admin.Channel()
}

// dropAdmin closes the admin connection: the next channel connects to
// the next node that answers.
func (d *Driver) dropAdmin() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.admin != nil {
		_ = d.admin.Close()
	}
}

// withChannel runs f on a fresh admin channel and closes it.
func (d *Driver) withChannel(ctx context.Context, f func(ch *amqp.Channel) error) error {
	ch, err := d.channel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	return f(ch)
}

// BrokerVersion implements driver.Driver: from the server's properties.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	ch, err := d.channel(ctx)
	if err != nil {
		return "", err
	}
	_ = ch.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	product, _ := d.admin.Properties["product"].(string)
	version, _ := d.admin.Properties["version"].(string)
	return strings.TrimSpace(product + " " + version), nil
}

func metaQueue(topic string) string { return topic + ".bb-meta" }

// partitionQueue is the queue of one partition of a subscription.
func partitionQueue(subscription string, partition int) string {
	return subscription + "." + strconv.Itoa(partition)
}

// CreateTopic implements driver.Driver: the exchange, and the topic's
// record in its meta queue.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	return d.withChannel(ctx, func(ch *amqp.Channel) error {
		if _, err := ch.QueueDeclarePassive(metaQueue(spec.Name), true, false, false, false, nil); err == nil {
			return fmt.Errorf("create topic %q: it exists", spec.Name)
		}
		// The failed passive declare closed the channel.
		ch, err := d.channel(ctx)
		if err != nil {
			return err
		}
		defer ch.Close()
		if err := ch.ExchangeDeclare(spec.Name, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
			return fmt.Errorf("create topic %q: %w", spec.Name, err)
		}
		if _, err := ch.QueueDeclare(metaQueue(spec.Name), true, false, false, false, d.metaArgs()); err != nil {
			return fmt.Errorf("create topic %q: %w", spec.Name, err)
		}
		return d.record(ctx, ch, spec.Name, "partitions="+strconv.Itoa(spec.Partitions))
	})
}

// record adds an entry to a topic's meta queue, confirmed.
func (d *Driver) record(ctx context.Context, ch *amqp.Channel, topic, entry string) error {
	if err := ch.Confirm(false); err != nil {
		return err
	}
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", metaQueue(topic), true, false,
		amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(entry)})
	if err == nil {
		var ok bool
		ok, err = dc.WaitContext(ctx)
		if err == nil && !ok {
			err = errors.New("not confirmed")
		}
	}
	if err != nil {
		return fmt.Errorf("record %s of topic %q: %w", entry, topic, err)
	}
	return nil
}

// topicRecord is what a topic's meta queue says.
type topicRecord struct {
	partitions    int
	subscriptions []string
}

// lookup reads a topic's record without consuming it (its entries are
// requeued).
func (d *Driver) lookup(ctx context.Context, topic string) (topicRecord, error) {
	var r topicRecord
	err := d.withChannel(ctx, func(ch *amqp.Channel) error {
		for {
			m, ok, err := ch.Get(metaQueue(topic), false)
			var ae *amqp.Error
			// A classic queue whose node is down is NOT_FOUND too, but
			// "down or inaccessible": it exists.
			if errors.As(err, &ae) && ae.Code == amqp.NotFound && !strings.Contains(ae.Reason, "down or inaccessible") {
				return fmt.Errorf("topic %q: %w", topic, driver.ErrTopicNotFound)
			}
			if err != nil {
				return fmt.Errorf("topic %q: %w", topic, err)
			}
			if !ok {
				break
			}
			k, v, _ := strings.Cut(string(m.Body), "=")
			switch k {
			case "partitions":
				r.partitions, _ = strconv.Atoi(v)
			case "subscription":
				if !slices.Contains(r.subscriptions, v) {
					r.subscriptions = append(r.subscriptions, v)
				}
			}
		}
		// Closing the channel requeues every entry taken.
		return nil
	})
	if err == nil && r.partitions < 1 {
		err = fmt.Errorf("topic %q: its record in queue %s has no partition count", topic, metaQueue(topic))
	}
	return r, err
}

// DeleteTopic implements driver.Driver: the subscriptions' queues, the
// exchange and the record. A failure is tried again through each other
// node of the cluster in turn: the node the admin connection used may be
// the one that went down.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	var err error
	for range d.cfg.uris {
		err = d.deleteTopic(ctx, name)
		if err == nil || errors.Is(err, driver.ErrTopicNotFound) || errors.Is(err, driver.ErrRefused) || ctx.Err() != nil {
			return err
		}
		d.dropAdmin()
	}
	return err
}

func (d *Driver) deleteTopic(ctx context.Context, name string) error {
	r, err := d.lookup(ctx, name)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return d.withChannel(ctx, func(ch *amqp.Channel) error {
		for _, sub := range r.subscriptions {
			for p := range r.partitions {
				if _, err := ch.QueueDelete(partitionQueue(sub, p), false, false, false); err != nil {
					return fmt.Errorf("delete topic %q: %w", name, err)
				}
			}
		}
		if err := ch.ExchangeDelete(name, false, false); err != nil {
			return fmt.Errorf("delete topic %q: %w", name, err)
		}
		_, err := ch.QueueDelete(metaQueue(name), false, false, false)
		return err
	})
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.admin != nil {
		_ = d.admin.Close()
	}
}

// metaArgs are the arguments of a topic's meta queue: a quorum queue of
// the subscriptions' replication when they are replicated, so that the
// topic's record (and its deletion) survives the loss of a node; else a
// classic queue.
func (d *Driver) metaArgs() amqp.Table {
	if d.cfg.queueType == "classic" || d.cfg.replicas < 2 {
		return amqp.Table{"x-queue-type": "classic"}
	}
	return amqp.Table{"x-queue-type": "quorum", "x-quorum-initial-group-size": int32(d.cfg.replicas)}
}

// queueArgs are the arguments of a subscription's queues.
func (d *Driver) queueArgs() amqp.Table {
	args := amqp.Table{"x-queue-type": d.cfg.queueType}
	if d.cfg.queueType != "classic" && d.cfg.replicas > 0 {
		args["x-quorum-initial-group-size"] = int32(d.cfg.replicas)
		if d.cfg.queueType == "stream" {
			delete(args, "x-quorum-initial-group-size")
			args["x-initial-cluster-size"] = int32(d.cfg.replicas)
		}
	}
	return args
}

// subscribe declares a subscription's queues and binds them, recording
// the subscription when it is new.
func (d *Driver) subscribe(ctx context.Context, topic, subscription string, r topicRecord) error {
	return d.withChannel(ctx, func(ch *amqp.Channel) error {
		for p := range r.partitions {
			q := partitionQueue(subscription, p)
			if _, err := ch.QueueDeclare(q, true, false, false, false, d.queueArgs()); err != nil {
				return fmt.Errorf("subscription %q: declare queue %s: %w", subscription, q, err)
			}
			if err := ch.QueueBind(q, strconv.Itoa(p), topic, false, nil); err != nil {
				return fmt.Errorf("subscription %q: bind queue %s: %w", subscription, q, err)
			}
		}
		if slices.Contains(r.subscriptions, subscription) {
			return nil
		}
		return d.record(ctx, ch, topic, "subscription="+subscription)
	})
}

// errKind gives RabbitMQ errors a short kind for failure counts.
type errKind struct {
	kind string
	err  error
}

func (e errKind) Error() string { return e.kind + ": " + e.err.Error() }
func (e errKind) Unwrap() error { return e.err }
func (e errKind) Kind() string  { return e.kind }

var (
	errNack        = errors.New("the broker refused the message (nack)")
	errUnroutable  = errors.New("no queue took the message (returned): the topic has no subscription yet")
	errClosed      = errors.New("producer closed")
	errDisconnects = errors.New("connection lost before the confirm")
)
