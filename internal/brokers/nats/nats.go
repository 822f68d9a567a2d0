// Package nats is brokerbench's NATS JetStream: its driver, on nats.go's
// jetstream API; the local clusters brokerbench starts (Kind); the reading
// of a server's /varz (ParseVarz); and the module that registers them
// (module.go).
//
// A topic is a stream of the same name whose partitions are subjects,
// TOPIC.0 to TOPIC.N-1: a producer picks the partition by key hash, or in
// turn without a key, and each partition is a lane of order. A
// subscription is a durable pull consumer on all of the stream's subjects;
// the consumers of one subscription share it, and each message is
// acknowledged (explicit ack) after the runner consumed it. Producers
// publish asynchronously with a bounded number of pending acknowledgements,
// each producer and each consumer on its own connection.
package nats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/brokerbench/brokerbench/internal/clock"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// settings are the driver's config settings, by section, with defaults.
var settings = map[string]map[string]string{
	"common": {
		"servers": "nats://127.0.0.1:4222", // comma-separated server URLs
		// OMB's NATS driver file names the server so, and may set its
		// streams' storage (File or Memory; it overrides the topic
		// section's storage) and size limit (-1: none).
		"natsHostUrl": "", "storageType": "", "maxBytes": "-1",
		// Credentials: a user and password, a token, a credentials file
		// (JWT and NKey seed) or an NKey seed file.
		"user": "", "password": "", "token": "", "credsFile": "", "nkeySeedFile": "",
	},
	"topic":    {"storage": "file"},                            // file or memory
	"producer": {"maxPending": "4000", "ackTimeoutMs": "5000"}, // async publishes awaiting their ack; how long each may wait
	// Bytes pulled ahead per consumer (or, when set, messages); unacked
	// messages per subscription.
	"consumer": {"fetchMaxBytes": "16777216", "fetchBatch": "", "maxAckPending": "20000"},
}

type config struct {
	servers       string
	auth          []nats.Option // credentials and TLS
	storage       jetstream.StorageType
	maxBytes      int64 // a stream's size limit; -1: none
	maxPending    int
	ackTimeout    time.Duration
	fetchBatch    int // 0: fetchMaxBytes bounds the pulls
	fetchMaxBytes int
	maxAckPending int
	effective     map[string]workload.Properties
}

// localListener names the listener of a local NATS cluster a config
// connects to: "tls" with tls: true or tls:// servers, else "plain".
func localListener(dc *workload.DriverConfig) string {
	servers, _ := dc.Common.Get("servers")
	if v, _ := dc.Common.Get("tls"); v == "true" || strings.HasPrefix(servers, "tls://") {
		return "tls"
	}
	return "plain"
}

// parseConfig validates every setting of dc; local are the credentials
// of a local cluster brokerbench secured, used where dc gives none.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "NATS", settings)
	c := &config{servers: s.String("common", "servers")}
	if u := s.String("common", "natsHostUrl"); u != "" {
		c.servers = u
	}
	if len(endpoints) > 0 {
		c.servers = strings.Join(endpoints, ",")
	}
	section, key := "topic", "storage"
	if s.String("common", "storageType") != "" {
		section, key = "common", "storageType"
	}
	switch v := s.String(section, key); strings.ToLower(v) {
	case "file":
		c.storage = jetstream.FileStorage
	case "memory":
		c.storage = jetstream.MemoryStorage
	default:
		s.Fail(section, key, "must be file or memory, got %q", v)
	}
	if c.maxBytes = int64(s.Int("common", "maxBytes", -1)); c.maxBytes == 0 {
		s.Fail("common", "maxBytes", "must be -1 (no limit) or a size in bytes, got 0")
	}
	c.auth = credentials(s, local)
	if cfg := driver.ClientTLS(s, strings.HasPrefix(c.servers, "tls://"), local); cfg != nil {
		c.auth = append(c.auth, nats.Secure(cfg))
	}
	c.maxPending = s.Int("producer", "maxPending", 1)
	c.ackTimeout = time.Duration(s.Int("producer", "ackTimeoutMs", 1)) * time.Millisecond
	if s.String("consumer", "fetchBatch") != "" {
		c.fetchBatch = s.Int("consumer", "fetchBatch", 1)
	}
	c.fetchMaxBytes = s.Int("consumer", "fetchMaxBytes", 1)
	c.maxAckPending = s.Int("consumer", "maxAckPending", 1)
	if err := s.Err(); err != nil {
		return nil, err
	}
	c.effective = s.Effective("natsHostUrl", "password", "token", "tlsTrustStorePassword", "tlsKeyStorePassword")
	// The servers connected to, credentials in their URLs masked, in
	// place of the servers setting; the section's other settings stay.
	common := workload.Properties{{Key: "servers", Value: driver.RedactEndpoints(c.servers)}}
	for _, p := range c.effective["common"] {
		if p.Key != "servers" {
			common = append(common, p)
		}
	}
	c.effective["common"] = common
	return c, nil
}

// credentials returns the connect options of the credentials settings
// (at most one kind), or else local's user.
func credentials(s *driver.Settings, local *driver.Credentials) []nats.Option {
	user, pw, token := s.String("common", "user"), s.String("common", "password"), s.String("common", "token")
	creds, seed := s.String("common", "credsFile"), s.String("common", "nkeySeedFile")
	var opts []nats.Option
	kinds := 0
	if user != "" || pw != "" {
		kinds++
		opts = append(opts, nats.UserInfo(user, pw))
	}
	if token != "" {
		kinds++
		opts = append(opts, nats.Token(token))
	}
	if creds != "" {
		kinds++
		opts = append(opts, nats.UserCredentials(creds))
	}
	if seed != "" {
		kinds++
		o, err := nats.NkeyOptionFromSeed(seed)
		if err != nil {
			s.Fail("common", "nkeySeedFile", "%v", err)
		}
		opts = append(opts, o)
	}
	if kinds > 1 {
		s.Fail("common", "user", "give one kind of credentials: user and password, token, credsFile or nkeySeedFile")
	}
	if kinds == 0 && local != nil {
		opts = append(opts, nats.UserInfo(local.Username, local.Password))
	}
	return opts
}

// Driver is a connection to a NATS server or cluster with JetStream.
type Driver struct {
	cfg  *config
	opts driver.Options
	mu   sync.Mutex
	nc   *nats.Conn // admin connection, made on first use
	js   jetstream.JetStream
}

var (
	_ driver.WrittenCounter = (*Driver)(nil)
	_ driver.Pauser         = (*consumer)(nil)
)

// New validates dc; it connects on the first operation.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, opts: opts}, nil
}

// connect opens a connection to the servers, dialling through opts.
func (d *Driver) connect(name string) (*nats.Conn, error) {
	nc, err := nats.Connect(d.cfg.servers, append([]nats.Option{nats.Name(name), nats.Timeout(5 * time.Second),
		nats.SetCustomDialer(dialer{d.opts}), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, d.cfg.auth...)...)
	if err != nil {
		err = fmt.Errorf("connect to NATS at %s: %w", driver.RedactEndpoints(d.cfg.servers), err)
		switch {
		case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
			return nil, driver.Refused(fmt.Errorf("%w: check the user and password, token, credsFile or nkeySeedFile", err))
		case driver.TLSAdvice(err) != "":
			return nil, driver.Refused(fmt.Errorf("%w: %s (tlsTrustStore, tlsVerifyHostname, tls)", err, driver.TLSAdvice(err)))
		}
		return nil, err
	}
	return nc, nil
}

// dialer dials through driver.Options, for nats.SetCustomDialer.
type dialer struct{ opts driver.Options }

func (dl dialer) Dial(network, address string) (net.Conn, error) {
	return dl.opts.Dial(context.Background(), network, address)
}

func (d *Driver) admin() (jetstream.JetStream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.js != nil {
		return d.js, nil
	}
	nc, err := d.connect("brokerbench-admin")
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	d.nc, d.js = nc, js
	return js, nil
}

// BrokerVersion implements driver.Driver.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	js, err := d.admin()
	if err != nil {
		return "", err
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return "", fmt.Errorf("JetStream is not available: %w", err)
	}
	return "NATS Server " + d.nc.ConnectedServerVersion(), nil
}

// subject is the subject of a topic's partition.
func subject(topic string, partition int) string { return topic + "." + strconv.Itoa(partition) }

// CreateTopic implements driver.Driver: a stream with one subject per
// partition, limits retention, on file or in memory as configured.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	js, err := d.admin()
	if err != nil {
		return err
	}
	subjects := make([]string, spec.Partitions)
	for p := range subjects {
		subjects[p] = subject(spec.Name, p)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: spec.Name, Subjects: subjects, Storage: d.cfg.storage,
		MaxBytes: d.cfg.maxBytes, Replicas: max(1, spec.ReplicationFactor), Retention: jetstream.LimitsPolicy})
	if err != nil {
		return fmt.Errorf("create stream %q: %w", spec.Name, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	js, err := d.admin()
	if err != nil {
		return err
	}
	if err := js.DeleteStream(ctx, name); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("delete stream %q: %w", name, driver.ErrTopicNotFound)
		}
		return fmt.Errorf("delete stream %q: %w", name, err)
	}
	return nil
}

// Written implements driver.WrittenCounter: the stream's last sequence.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	js, err := d.admin()
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", topic, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", topic, err)
	}
	return int64(info.State.LastSeq), nil
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nc != nil {
		d.nc.Close()
	}
}

// partitions returns the number of partitions (subjects) of a stream.
func (d *Driver) partitions(ctx context.Context, topic string) (int, error) {
	js, err := d.admin()
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, topic)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0, fmt.Errorf("stream %q: %w", topic, driver.ErrTopicNotFound)
		}
		return 0, fmt.Errorf("stream %q: %w", topic, err)
	}
	return len(s.CachedInfo().Config.Subjects), nil
}

// NewProducer implements driver.Driver.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	parts, err := d.partitions(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	nc, err := d.connect("brokerbench-producer")
	if err != nil {
		return nil, err
	}
	pending := min(d.cfg.maxPending, max(1, spec.MaxInFlight))
	p := &producer{nc: nc, ack: ack, inFlight: ring{items: make([]sent, pending)}, slots: make(chan struct{}, pending),
		stopTimeouts: make(chan struct{}), timeoutsDone: make(chan struct{})}
	// The outcomes come to handlers, on nats.go's goroutines, rather than
	// to a future per message that a goroutine of ours would wait on.
	// nats.go is not bounded (slots bounds the producer) and times out
	// nothing: its timeout starts a timer per message, a fifth of the
	// client's CPU per message measured at 100 B; failTimedOut times
	// the publishes out instead.
	p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(math.MaxInt32),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, msg *nats.Msg, _ *jetstream.PubAck) { p.settle(msg, nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, msg *nats.Msg, err error) { p.settle(msg, err) }))
	if err != nil {
		nc.Close()
		return nil, err
	}
	for i := range parts {
		p.subjects = append(p.subjects, subject(spec.Topic, i))
	}
	go p.failTimedOut(d.cfg.ackTimeout)
	return p, nil
}

type producer struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	subjects []string
	spread   driver.Spreader
	// mu guards inFlight and closed, and is held while ack is called, so
	// that it is never called concurrently.
	mu  sync.Mutex
	ack driver.AckFunc
	// inFlight are the messages sent and not yet taken out, oldest
	// first: the server acks a connection's publishes to a stream in
	// the order they came, so the ack for the oldest is found first,
	// without the cost of a map. Whoever settles one calls ack for it,
	// once.
	inFlight ring
	// slots holds a token per message in inFlight: Send waits for room
	// in it. (nats.go, bounded, would stall a publish beyond its bound
	// for 200 ms, then fail it: ErrTooManyStalledMsgs.)
	slots   chan struct{}
	closed  bool // by Close: sends fail at once
	closing sync.Once
	wg      sync.WaitGroup // messages in inFlight
	// stopTimeouts ends failTimedOut, which then closes timeoutsDone.
	stopTimeouts, timeoutsDone chan struct{}
}

// sent is a message in flight: the nats.Msg it was published as (its
// DriverState), and when it was sent, in clock nanoseconds: the
// Message's Time, which the runner sets (reading the clock again cost 2%
// of the producer's CPU), or the clock's when Send got none. m is nil
// once its outcome was given.
type sent struct {
	msg  *nats.Msg
	m    *driver.Message
	when int64
}

// ring is a queue of messages in flight, oldest first, in a fixed array.
type ring struct {
	items   []sent
	head, n int
}

func (r *ring) push(s sent) {
	r.items[(r.head+r.n)%len(r.items)] = s
	r.n++
}

// at returns the k-th oldest.
func (r *ring) at(k int) *sent { return &r.items[(r.head+k)%len(r.items)] }

// find returns the unsettled message published as msg; nil if none.
func (r *ring) find(msg *nats.Msg) *sent {
	for k := range r.n {
		if s := r.at(k); s.msg == msg && s.m != nil {
			return s
		}
	}
	return nil
}

// popSettled takes the settled messages at the head out and says how
// many.
func (r *ring) popSettled() int {
	popped := 0
	for r.n > 0 && r.items[r.head].m == nil {
		r.items[r.head] = sent{}
		r.head = (r.head + 1) % len(r.items)
		r.n--
		popped++
	}
	return popped
}

// Send implements driver.Producer.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	part := p.spread.Partition(m.Key, len(p.subjects))
	msg, _ := m.DriverState.(*nats.Msg)
	if msg == nil {
		msg = &nats.Msg{}
		m.DriverState = msg
	}
	msg.Subject, msg.Data = p.subjects[part], m.Value
	select {
	case p.slots <- struct{}{}:
	default:
		// maxPending publishes await their ack: the send waits, and its
		// lag shows in the latencies.
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			p.mu.Lock()
			p.ack(m, sendError{ctx.Err()})
			p.mu.Unlock()
			return
		}
	}
	p.mu.Lock()
	if p.closed {
		p.ack(m, sendError{nats.ErrConnectionClosed})
		p.mu.Unlock()
		<-p.slots
		return
	}
	// In flight before it is published: its ack may come before
	// PublishMsgAsync returns.
	when := m.Time
	if when == 0 {
		when = clock.Now()
	}
	p.wg.Add(1)
	p.inFlight.push(sent{msg: msg, m: m, when: when})
	p.mu.Unlock()
	if _, err := p.js.PublishMsgAsync(msg); err != nil {
		p.settle(msg, err)
	}
}

// settle gives the outcome of the message published as msg, unless it
// was given already (a message that timed out or Close failed).
func (p *producer) settle(msg *nats.Msg, err error) {
	p.mu.Lock()
	if s := p.inFlight.find(msg); s != nil {
		if err != nil {
			err = sendError{err}
		}
		p.ack(s.m, err)
		s.m = nil
	}
	p.release(p.inFlight.popSettled())
	p.mu.Unlock()
}

// release frees the slots of n messages taken out of inFlight. The
// caller holds mu.
func (p *producer) release(n int) {
	for range n {
		<-p.slots
		p.wg.Done()
	}
}

// failTimedOut fails, every tenth of timeout, the publishes that have
// awaited their ack longer than timeout, until Close. nats.go keeps
// such a publish and may still call back for it, so its nats.Msg is not
// used again: a late ack must not settle the message sent next.
func (p *producer) failTimedOut(timeout time.Duration) {
	defer close(p.timeoutsDone)
	tick := time.NewTicker(max(timeout/10, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.stopTimeouts:
			return
		case <-tick.C:
		}
		deadline := clock.Now() - timeout.Nanoseconds()
		p.mu.Lock()
		for k := range p.inFlight.n {
			if s := p.inFlight.at(k); s.m != nil && s.when <= deadline {
				s.m.DriverState = nil
				p.ack(s.m, sendError{jetstream.ErrAsyncPublishTimeout})
				s.m = nil
			}
		}
		p.release(p.inFlight.popSettled())
		p.mu.Unlock()
	}
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.wg) }

// Close implements driver.Producer: the connection closes, the publishes
// still awaiting their ack fail, and every acknowledgement has been called
// when it returns.
func (p *producer) Close() {
	p.closing.Do(func() {
		close(p.stopTimeouts)
		<-p.timeoutsDone
		p.nc.Close()
		p.mu.Lock()
		p.closed = true
		for k := range p.inFlight.n {
			if s := p.inFlight.at(k); s.m != nil {
				p.ack(s.m, sendError{nats.ErrConnectionClosed})
				s.m = nil
			}
		}
		p.release(p.inFlight.popSettled())
		p.mu.Unlock()
	})
}

// sendError gives NATS send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error.
func (e sendError) Kind() string {
	switch {
	case errors.Is(e.err, nats.ErrConnectionClosed):
		return "CONNECTION_CLOSED"
	case errors.Is(e.err, jetstream.ErrTooManyStalledMsgs):
		return "TOO_MANY_PENDING"
	case errors.Is(e.err, jetstream.ErrNoStreamResponse), errors.Is(e.err, nats.ErrNoResponders):
		return "NO_RESPONSE"
	case errors.Is(e.err, jetstream.ErrAsyncPublishTimeout), errors.Is(e.err, context.DeadlineExceeded), errors.Is(e.err, nats.ErrTimeout):
		return "TIMEOUT"
	}
	return "other"
}

// NewConsumer implements driver.Driver: the subscription's durable pull
// consumer, created by its first member.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if _, err := d.partitions(ctx, spec.Topic); err != nil {
		return nil, err
	}
	nc, err := d.connect("brokerbench-consumer")
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	deliver := jetstream.DeliverAllPolicy
	if spec.Start == driver.StartNew {
		deliver = jetstream.DeliverNewPolicy
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, spec.Topic, jetstream.ConsumerConfig{Durable: spec.Subscription,
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: deliver, MaxAckPending: d.cfg.maxAckPending, AckWait: 30 * time.Second})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("consumer %q on stream %q: %w", spec.Subscription, spec.Topic, err)
	}
	c := &consumer{nc: nc, consume: consume, prefix: spec.Topic + ".", stopping: make(chan struct{})}
	if c.pull, err = cons.Consume(c.onMessage, d.cfg.pullLimit()); err != nil {
		nc.Close()
		return nil, fmt.Errorf("pull from %q: %w", spec.Subscription, err)
	}
	return c, nil
}

// pullLimit bounds what a consumer has pulled and not yet taken: fetchBatch
// messages when set, else fetchMaxBytes. nats.go asks for more when half
// is left. A flat-out producer keeps nats-server busy, and a pull's answer
// slow: with pulls of 500 messages a consumer received 20,000-22,000 msg/s
// while its producer published 164,000-166,000 (1 producer, 6 partitions,
// 100 B, local server), with 8,000 it kept pace at 92,000-106,000. A bound
// in bytes keeps large messages from filling the client's memory.
func (c *config) pullLimit() jetstream.PullConsumeOpt {
	if c.fetchBatch > 0 {
		return jetstream.PullMaxMessages(c.fetchBatch)
	}
	return jetstream.PullMaxBytes(c.fetchMaxBytes)
}

// consumer takes its messages in nats.go's Consume callback, on the
// subscription's own delivery goroutine. (The Messages iterator hands
// each message over a channel to a goroutine of ours and arms a new
// heartbeat timer for each.)
type consumer struct {
	nc       *nats.Conn
	pull     jetstream.ConsumeContext
	consume  driver.ConsumeFunc
	prefix   string        // the stream's name and a dot: what precedes a subject's partition
	stopping chan struct{} // closed by Close: a paused callback returns
	// mu is held while a message is consumed; Close takes it to wait for
	// the message in hand, and sets closed under it.
	mu       sync.Mutex
	closed   bool
	delivery driver.Delivery // reused: Consume's callback is never called concurrently
	// PauseGate implements driver.Pauser: the callback stops taking
	// messages from its client's buffer (what was already pulled, up to
	// pullLimit, may still arrive).
	driver.PauseGate
	closing sync.Once
}

// onMessage is Consume's callback: it hands msg to the runner, then
// acknowledges it. nats.go calls it from one goroutine at a time.
func (c *consumer) onMessage(msg jetstream.Msg) {
	c.Wait(c.stopping)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	d := &c.delivery
	d.Value, d.Lane = msg.Data(), driver.NoOrder
	if p, err := strconv.Atoi(strings.TrimPrefix(msg.Subject(), c.prefix)); err == nil {
		d.Lane = int32(p)
	}
	c.consume(d)
	_ = msg.Ack()
}

// Ready implements driver.Consumer: the pull consumer exists once
// NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Close implements driver.Consumer: no message is consumed once it
// returns.
func (c *consumer) Close() {
	c.closing.Do(func() {
		close(c.stopping)
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.pull.Stop()
		c.nc.Close()
	})
}
