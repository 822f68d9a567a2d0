// Package stream is brokerbench's RabbitMQ Streams driver, on the stream
// protocol (rabbitmq-stream-go-client), and the module that registers it
// (module.go) with the local clusters of package rabbitmq.
//
// A topic of one partition is a stream of the same name; a topic of N
// partitions is N streams, TOPIC-0 to TOPIC-(N-1), the names RabbitMQ
// gives a super stream's partitions. A producer has a stream producer per
// partition and picks the partition by key hash, or in turn without a
// key; the client batches messages (batchSize, sub-entries with
// compression) and each message is acknowledged by its publish confirm.
// A subscription reads every partition from the first retained offset
// (or the next one, for StartNew); a stream has no per-message
// acknowledgement, so the broker's flow control is credit based.
//
// A stream is replicated on every node of the cluster (RabbitMQ's
// default, which the stream protocol cannot change); a replication factor
// that differs is refused when the topic is created.
//
// Streams give every consumer every message: the consumers of one
// subscription in one brokerbench process share it, the first one
// reading and the others standing by, as RabbitMQ 3.11's single active
// consumer would.
package stream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/message"
	rstream "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	// The client logs every failed dial and closed socket through the
	// standard logger, which nothing else in brokerbench uses;
	// brokerbench reports the errors its calls return instead.
	log.SetOutput(io.Discard)
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// localListener names the listener of a local RabbitMQ's nodes a config
// connects to: "stream_tls" with tls: true, else "stream".
func localListener(dc *workload.DriverConfig) string {
	if v, _ := dc.Common.Get("tls"); v == "true" {
		return "stream_tls"
	}
	return "stream"
}

// settings are the driver's settings by section, with their defaults.
var settings = map[string]map[string]string{
	"common": {"uris": "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f"}, // comma-separated
	"topic":  {"maxLengthBytes": "0", "maxSegmentSizeBytes": "0"},          // 0: the broker's default
	"producer": {
		"batchSize": "100", "batchPublishingDelayMs": "100", // the client's defaults
		"subEntrySize": "1", "compression": "none", // sub-entry batching: messages per entry; none|gzip|snappy|lz4|zstd
		"confirmTimeoutMs": "10000",
	},
	"consumer": {"initialCredits": "10", "crcCheck": "false"},
}

var compressions = map[string]rstream.Compression{
	"none": rstream.Compression{}.None(), "gzip": rstream.Compression{}.Gzip(), "snappy": rstream.Compression{}.Snappy(),
	"lz4": rstream.Compression{}.Lz4(), "zstd": rstream.Compression{}.Zstd(),
}

type config struct {
	uris                  []string
	tls                   *tls.Config // nil: no rabbitmq-stream+tls URI
	maxLength, maxSegment int64
	batchSize, batchDelay int
	subEntrySize          int
	compression           *rstream.Compression // nil: none
	confirmTimeout        time.Duration
	initialCredits        int
	crcCheck              bool
	effective             map[string]workload.Properties
}

// parseConfig validates every setting of dc; local are the credentials of
// a local cluster brokerbench secured, used for addresses given without.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "RabbitMQ stream", settings)
	c := &config{}
	raw := strings.Split(s.String("common", "uris"), ",")
	if len(endpoints) > 0 {
		raw = endpoints
	}
	scheme := "rabbitmq-stream"
	if s.Bool("common", "tls") {
		scheme = "rabbitmq-stream+tls"
	}
	userinfo := url.UserPassword("guest", "guest")
	if local != nil {
		userinfo = url.UserPassword(local.Username, local.Password)
	}
	secure := false
	for _, u := range raw {
		u = strings.TrimSpace(u)
		if !strings.Contains(u, "://") {
			u = (&url.URL{Scheme: scheme, User: userinfo, Host: u, Path: "/%2f", RawPath: "/%2f"}).String()
		}
		secure = secure || strings.HasPrefix(u, "rabbitmq-stream+tls://")
		if p, err := url.Parse(u); err != nil || p.Scheme != "rabbitmq-stream" && p.Scheme != "rabbitmq-stream+tls" {
			s.Fail("common", "uris", "%s: expected rabbitmq-stream://user:password@host:port/vhost", driver.RedactEndpoints(u))
		}
		c.uris = append(c.uris, u)
	}
	c.tls = driver.ClientTLS(s, secure, local)
	if c.tls != nil && !c.tls.InsecureSkipVerify {
		// The stream client dials the nodes without naming the host to
		// the TLS handshake, so only the chain can be checked.
		driver.SkipHostname(c.tls)
	}
	c.maxLength = int64(s.Int("topic", "maxLengthBytes", 0))
	c.maxSegment = int64(s.Int("topic", "maxSegmentSizeBytes", 0))
	// The client's own bounds, refused here with the setting's line
	// rather than when the first producer is made.
	within := func(key string, lo, hi int) int {
		v := s.Int("producer", key, lo)
		if v > hi {
			s.Fail("producer", key, "must be at most %d (the stream client's limit), got %d", hi, v)
		}
		return v
	}
	c.batchSize = within("batchSize", 1, 10_000)
	c.batchDelay = within("batchPublishingDelayMs", 1, 500)
	c.subEntrySize = within("subEntrySize", 1, 65_535)
	codec := s.String("producer", "compression")
	comp, ok := compressions[codec]
	if !ok {
		s.Fail("producer", "compression", "must be none, gzip, snappy, lz4 or zstd")
	}
	if codec != "none" && c.subEntrySize < 2 {
		s.Fail("producer", "compression", "compresses sub-entries: set subEntrySize above 1")
	}
	if codec != "none" {
		c.compression = &comp
	}
	c.confirmTimeout = time.Duration(s.Int("producer", "confirmTimeoutMs", 1000)) * time.Millisecond
	c.initialCredits = s.Int("consumer", "initialCredits", 1)
	c.crcCheck = s.Bool("consumer", "crcCheck")
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective("uris", "tlsTrustStorePassword", "tlsKeyStorePassword")
	redacted := make([]string, len(c.uris))
	for i, u := range c.uris {
		redacted[i] = driver.RedactEndpoints(u)
	}
	c.effective["common"] = workload.Properties{{Key: "uris", Value: strings.Join(redacted, ",")}}
	return c, nil
}

// Driver is a stream-protocol environment on one RabbitMQ cluster.
type Driver struct {
	cfg *config

	mu   sync.Mutex
	env  *rstream.Environment
	subs map[string]bool // subscriptions read by a consumer of this driver
}

// New validates dc; the connection is made on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	if len(opts.Hosts) > 0 {
		return nil, fmt.Errorf("%s: the RabbitMQ stream driver cannot resolve the names of a linked cluster (its client dials on its own)", dc.Source)
	}
	return &Driver{cfg: cfg, subs: map[string]bool{}}, nil
}

// environment connects on first use, and again after the connection
// was closed.
func (d *Driver) environment() (*rstream.Environment, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.env != nil && !d.env.IsClosed() {
		return d.env, nil
	}
	if d.cfg.tls != nil {
		if err := d.checkTLS(); err != nil {
			return nil, err
		}
	}
	opts := rstream.NewEnvironmentOptions().SetUris(d.cfg.uris).SetRPCTimeout(10 * time.Second).
		SetMaxProducersPerClient(1).SetMaxConsumersPerClient(1)
	if d.cfg.tls != nil {
		opts = opts.IsTLS(true).SetTLSConfig(d.cfg.tls)
	}
	env, err := rstream.NewEnvironment(opts)
	if err != nil {
		hosts := make([]string, len(d.cfg.uris))
		for i, u := range d.cfg.uris {
			hosts[i] = driver.RedactEndpoints(u)
		}
		err = fmt.Errorf("RabbitMQ streams at %s: %w", strings.Join(hosts, ","), err)
		switch {
		case errors.Is(err, rstream.AuthenticationFailure), errors.Is(err, rstream.AuthenticationFailureLoopbackError):
			return nil, driver.Refused(fmt.Errorf("%w: check the user and password in uris", err))
		case driver.TLSAdvice(err) != "":
			return nil, driver.Refused(fmt.Errorf("%w: %s (tlsTrustStore, tlsVerifyHostname, rabbitmq-stream+tls://)", err, driver.TLSAdvice(err)))
		}
		return nil, err
	}
	d.env = env
	return env, nil
}

// checkTLS makes a TLS handshake with the first TLS URI's server: the
// stream client reports a failed handshake only as a timeout, after 10 s.
func (d *Driver) checkTLS() error {
	for _, u := range d.cfg.uris {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "rabbitmq-stream+tls" {
			continue
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", p.Host, d.cfg.tls)
		if err != nil {
			err = fmt.Errorf("RabbitMQ streams at %s: %w", p.Host, err)
			if advice := driver.TLSAdvice(err); advice != "" {
				return driver.Refused(fmt.Errorf("%w: %s (tlsTrustStore, tlsVerifyHostname, rabbitmq-stream+tls://)", err, advice))
			}
			return err
		}
		return conn.Close()
	}
	return nil
}

// BrokerVersion implements driver.Driver. The stream protocol does not
// say; the version is left to the local cluster's record or unknown.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	if _, err := d.environment(); err != nil {
		return "", err
	}
	return "RabbitMQ (streams)", nil
}

// streams returns the stream names of a topic of n partitions.
func streams(topic string, n int) []string {
	if n == 1 {
		return []string{topic}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = topic + "-" + strconv.Itoa(i)
	}
	return names
}

// CreateTopic implements driver.Driver.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	env, err := d.environment()
	if err != nil {
		return err
	}
	opts := &rstream.StreamOptions{}
	if d.cfg.maxLength > 0 {
		opts.MaxLengthBytes = rstream.ByteCapacity{}.B(d.cfg.maxLength)
	}
	if d.cfg.maxSegment > 0 {
		opts.MaxSegmentSizeBytes = rstream.ByteCapacity{}.B(d.cfg.maxSegment)
	}
	for _, name := range streams(spec.Name, spec.Partitions) {
		if err := env.DeclareStream(name, opts); err != nil {
			return fmt.Errorf("create stream %q: %w", name, err)
		}
		if err := d.checkReplicas(env, name, spec.ReplicationFactor); err != nil {
			_ = d.DeleteTopic(ctx, spec.Name)
			return err
		}
	}
	return nil
}

// checkReplicas compares the copies RabbitMQ made of a new stream with
// the replication factor asked for: the stream protocol cannot choose
// them (RabbitMQ puts one on every node), so a run that would record a
// factor it did not get fails instead.
func (d *Driver) checkReplicas(env *rstream.Environment, name string, want int) error {
	md, err := env.StreamMetaData(name)
	if err != nil {
		return fmt.Errorf("stream %q: read its replicas: %w", name, err)
	}
	got := 1 + len(md.Replicas)
	if want > 0 && got != want {
		return fmt.Errorf("%w: stream %q has %d copies (RabbitMQ puts one on every node, and the stream protocol cannot ask for fewer), but the replication factor is %d: set replicationFactor to %d",
			workload.ErrInvalid, name, got, want, got)
	}
	return nil
}

// partitions finds a topic's streams: TOPIC, or TOPIC-0, TOPIC-1, ...
func (d *Driver) partitions(topic string) ([]string, error) {
	env, err := d.environment()
	if err != nil {
		return nil, err
	}
	if ok, err := env.StreamExists(topic); err != nil {
		return nil, fmt.Errorf("topic %q: %w", topic, err)
	} else if ok {
		return []string{topic}, nil
	}
	var names []string
	for i := 0; ; i++ {
		name := topic + "-" + strconv.Itoa(i)
		ok, err := env.StreamExists(name)
		if err != nil {
			return nil, fmt.Errorf("topic %q: %w", topic, err)
		}
		if !ok {
			break
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("topic %q: no stream %s or %s-0: %w", topic, topic, topic, driver.ErrTopicNotFound)
	}
	return names, nil
}

// DeleteTopic implements driver.Driver.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	names, err := d.partitions(name)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	env, _ := d.environment()
	for _, s := range names {
		if err := env.DeleteStream(s); err != nil {
			return fmt.Errorf("delete stream %q: %w", s, err)
		}
	}
	return nil
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.env != nil {
		_ = d.env.Close()
	}
}

// NewProducer implements driver.Driver: a stream producer per partition.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	names, err := d.partitions(spec.Topic)
	if err != nil {
		return nil, err
	}
	env, _ := d.environment()
	p := newProducer(ack)
	for _, name := range names {
		opts := rstream.NewProducerOptions().SetBatchSize(d.cfg.batchSize).SetBatchPublishingDelay(d.cfg.batchDelay).
			SetSubEntrySize(d.cfg.subEntrySize).SetConfirmationTimeOut(d.cfg.confirmTimeout).
			SetQueueSize(min(max(spec.MaxInFlight, d.cfg.batchSize, 100), 1_000_000)).SetClientProvidedName("brokerbench producer")
		if d.cfg.compression != nil {
			opts.SetCompression(*d.cfg.compression)
		}
		sp, err := env.NewProducer(name, opts)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("producer on stream %q: %w", name, err)
		}
		p.streams = append(p.streams, sp)
		p.loops.Add(1)
		go p.confirmLoop(sp.NotifyPublishConfirmation())
	}
	return p, nil
}

// newProducer returns a producer without streams yet.
func newProducer(ack driver.AckFunc) *producer {
	p := &producer{ack: ack}
	p.pending.next, p.pending.prev = &p.pending, &p.pending
	return p
}

// producer sends to a topic's streams.
type producer struct {
	streams []*rstream.Producer
	spread  driver.Spreader
	ack     driver.AckFunc

	mu sync.Mutex // guards pending; AckFunc calls are made under it, so never concurrent
	// pending is the ring of messages sent and not yet settled, for Close
	// to fail; its own links make the ring's head.
	pending  sent
	inFlight sync.WaitGroup
	loops    sync.WaitGroup
	closed   bool
}

// sent is a message in the stream client's hands: the AMQP message the
// client marshals and hands back in its confirm, carrying the runner's
// message it stands for, so that a confirm finds it without a lookup.
// While unsettled it is linked into its producer's pending ring.
type sent struct {
	amqp.AMQP10
	m          *driver.Message
	prev, next *sent
}

// Send implements driver.Producer.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	msg := p.track(m)
	if msg == nil {
		return
	}
	if err := p.streams[p.spread.Partition(m.Key, len(p.streams))].Send(msg); err != nil {
		p.settle(msg, errKind{"SEND", err})
	}
}

// track returns the stream message for m, pending until settled, or nil
// after acknowledging m as failed if the producer is closed.
func (p *producer) track(m *driver.Message) *sent {
	msg := &sent{AMQP10: *amqp.NewMessage(m.Value), m: m}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.ack(m, errKind{"CLOSED", errors.New("producer closed")})
		return nil
	}
	p.inFlight.Add(1)
	msg.prev, msg.next = p.pending.prev, &p.pending
	msg.prev.next, p.pending.prev = msg, msg
	return msg
}

// settle acknowledges the message behind msg, once: a message the client
// both refuses and reports is settled by whichever comes first, and one
// Close failed is not settled again.
func (p *producer) settle(msg message.StreamMessage, err error) {
	s, ok := msg.(*sent)
	if !ok {
		return
	}
	p.mu.Lock()
	ok = s.next != nil
	if ok {
		s.prev.next, s.next.prev = s.next, s.prev
		s.prev, s.next = nil, nil
		p.ack(s.m, err)
	}
	p.mu.Unlock()
	if ok {
		p.inFlight.Done()
	}
}

// confirmLoop settles messages as their confirms (or failures) arrive,
// until the stream producer closes.
func (p *producer) confirmLoop(confirms rstream.ChannelPublishConfirm) {
	defer p.loops.Done()
	for batch := range confirms {
		for _, st := range batch {
			// With sub-entries, one status stands for several messages.
			for _, s := range append([]*rstream.ConfirmationStatus{st}, st.LinkedMessages()...) {
				var err error
				if !s.IsConfirmed() {
					err = errKind{"NOT_CONFIRMED", fmt.Errorf("not confirmed: %v", s.GetError())}
				}
				p.settle(s.GetMessage(), err)
			}
		}
	}
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.inFlight) }

// Close implements driver.Producer: it waits up to 5 s for the confirms
// of messages in flight, then closes the stream producers and fails what
// is left.
func (p *producer) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = p.Flush(ctx)
	cancel()
	for _, sp := range p.streams {
		_ = sp.Close()
	}
	p.loops.Wait()
	p.mu.Lock()
	left := 0
	for s := p.pending.next; s != &p.pending; {
		next := s.next
		s.prev, s.next = nil, nil
		p.ack(s.m, errKind{"CLOSED", errors.New("producer closed before the confirm")})
		left++
		s = next
	}
	p.pending.next, p.pending.prev = &p.pending, &p.pending
	p.mu.Unlock()
	for range left {
		p.inFlight.Done()
	}
}

// errKind gives errors a short kind for failure counts.
type errKind struct {
	kind string
	err  error
}

func (e errKind) Error() string { return e.kind + ": " + e.err.Error() }
func (e errKind) Unwrap() error { return e.err }
func (e errKind) Kind() string  { return e.kind }
