// Package nsq is brokerbench's NSQ: its driver, on go-nsq; the local nsqd
// brokerbench starts (Kind); the reading of nsqd's /stats (ParseStats);
// and the module that registers them (module.go).
//
// A topic is an NSQ topic, one stream without partitions; a subscription
// is a channel of the topic, whose consumers share its messages, and
// every channel receives every message published after it exists. The
// driver reaches nsqd's HTTP API (topics, channels, counts) at its
// endpoint and learns the TCP port its producers and consumers connect
// to from /info. Producers publish asynchronously (PUB, each
// acknowledged by nsqd in order); consumers receive up to maxInFlight
// messages at once and finish (FIN) each after the runner consumed it.
// NSQ promises no order, and redelivers a message whose consumer did not
// finish it in time: deliveries carry driver.NoOrder, and the runner
// counts duplicates.
package nsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gonsq "github.com/nsqio/go-nsq"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// settings are the driver's settings by section, with their defaults.
var settings = map[string]map[string]string{
	"common": {
		"nsqdHttpAddress": "127.0.0.1:4151",
		// OMB's NSQ driver file: nsqd's host (its HTTP API on 4151), and
		// nsqlookupd's, which brokerbench's consumers do not need.
		"nsqdHost": "", "lookupHost": "",
	},
	"consumer": {
		"maxInFlight": "1000", // messages a consumer holds unfinished (RDY)
		// nsqd's buffering of what it sends a consumer: flushed when full
		// or after the timeout (go-nsq's defaults).
		"outputBufferSize": "16384", "outputBufferTimeoutMs": "250",
	},
}

type config struct {
	httpAddr            string
	maxInFlight         int
	outputBufferSize    int // -1: none
	outputBufferTimeout time.Duration
	effective           map[string]workload.Properties
}

// parseConfig validates every setting of dc; endpoints, when given, are
// nsqd's HTTP address.
func parseConfig(dc *workload.DriverConfig, endpoints []string) (*config, error) {
	s := driver.ParseSettings(dc, "NSQ", settings)
	c := &config{httpAddr: s.String("common", "nsqdHttpAddress")}
	if h := s.String("common", "nsqdHost"); h != "" {
		c.httpAddr = net.JoinHostPort(h, "4151")
	}
	var errs []error
	if len(endpoints) > 0 {
		c.httpAddr = endpoints[0]
		if len(endpoints) > 1 {
			errs = append(errs, fmt.Errorf("%s: the NSQ driver connects to one nsqd; got %d addresses", dc.Source, len(endpoints)))
		}
	}
	c.maxInFlight = s.Int("consumer", "maxInFlight", 1)
	if c.outputBufferSize = s.Int("consumer", "outputBufferSize", -1); c.outputBufferSize >= 0 && c.outputBufferSize < 64 {
		s.Fail("consumer", "outputBufferSize", "nsqd takes -1 (no buffer) or 64 bytes and more")
	}
	c.outputBufferTimeout = time.Duration(s.Int("consumer", "outputBufferTimeoutMs", 1)) * time.Millisecond
	if err := errors.Join(append(errs, s.Err())...); err != nil {
		return nil, err
	}
	c.effective = s.Effective("nsqdHttpAddress", "nsqdHost")
	c.effective["common"] = append(workload.Properties{{Key: "nsqdHttpAddress", Value: c.httpAddr}}, c.effective["common"]...)
	return c, nil
}

// Driver is a connection to one nsqd.
type Driver struct {
	cfg  *config
	opts driver.Options
	http *http.Client

	mu      sync.Mutex
	tcpAddr string // nsqd's TCP address, from /info once known
}

var (
	_ driver.WrittenCounter = (*Driver)(nil)
	_ driver.Pauser         = (*consumer)(nil)
)

// New validates dc; nsqd is reached on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, opts: opts,
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: opts.Dial}}}, nil
}

// apiError is an error status of nsqd's HTTP API, with its message
// ("TOPIC_NOT_FOUND").
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("nsqd answered %d %s", e.status, e.message) }

// call sends an HTTP request to nsqd's API and decodes a JSON answer
// into out, when out is not nil.
func (d *Driver) call(ctx context.Context, method, path string, query url.Values, out any) error {
	u := url.URL{Scheme: "http", Host: d.cfg.httpAddr, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return fmt.Errorf("nsqd at %s: %w", d.cfg.httpAddr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("nsqd at %s: %w", d.cfg.httpAddr, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		if json.Unmarshal(body, &e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		return &apiError{status: resp.StatusCode, message: e.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("nsqd at %s, %s: %w", d.cfg.httpAddr, path, err)
	}
	return nil
}

// info is what brokerbench reads of nsqd's /info.
type info struct {
	Version string `json:"version"`
	TCPPort int    `json:"tcp_port"`
}

// BrokerVersion implements driver.Driver.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	var in info
	if err := d.call(ctx, http.MethodGet, "/info", nil, &in); err != nil {
		return "", err
	}
	return "NSQ " + in.Version, nil
}

// tcp returns nsqd's TCP address: the HTTP address's host with the TCP
// port nsqd's /info gives (its broadcast address may be a host name
// the client cannot resolve).
func (d *Driver) tcp(ctx context.Context) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tcpAddr != "" {
		return d.tcpAddr, nil
	}
	var in info
	if err := d.call(ctx, http.MethodGet, "/info", nil, &in); err != nil {
		return "", err
	}
	host, _, err := net.SplitHostPort(d.cfg.httpAddr)
	if err != nil {
		return "", fmt.Errorf("nsqdHttpAddress %q: %w", d.cfg.httpAddr, err)
	}
	if ip, ok := d.opts.Hosts[host]; ok {
		host = ip
	}
	d.tcpAddr = net.JoinHostPort(host, strconv.Itoa(in.TCPPort))
	return d.tcpAddr, nil
}

// validName is what nsqd accepts as a topic or channel name.
var validName = regexp.MustCompile(`^[.a-zA-Z0-9_-]{1,64}$`)

func checkName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("NSQ %s name %q: nsqd takes 1 to 64 letters, digits, '.', '_' and '-'", what, name)
	}
	return nil
}

// CreateTopic implements driver.Driver. The topic has no channel until a
// consumer subscribes; nsqd keeps what is published before that for the
// first channel.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := checkName("topic", spec.Name); err != nil {
		return err
	}
	if err := d.call(ctx, http.MethodPost, "/topic/create", url.Values{"topic": {spec.Name}}, nil); err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver: the topic, its channels and what
// they hold.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	err := d.call(ctx, http.MethodPost, "/topic/delete", url.Values{"topic": {name}}, nil)
	if e, ok := err.(*apiError); ok && e.status == http.StatusNotFound {
		return fmt.Errorf("delete topic %q: %w", name, driver.ErrTopicNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// Written implements driver.WrittenCounter: the topic's message_count in
// nsqd's /stats, every message published to it, which consumption does
// not lower.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	var st stats
	if err := d.call(ctx, http.MethodGet, "/stats", url.Values{"format": {"json"}, "topic": {topic}, "include_clients": {"false"}}, &st); err != nil {
		return 0, fmt.Errorf("topic %q: %w", topic, err)
	}
	for _, t := range st.Topics {
		if t.Name == topic {
			return t.MessageCount, nil
		}
	}
	return 0, fmt.Errorf("topic %q: %w", topic, driver.ErrTopicNotFound)
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() { d.http.CloseIdleConnections() }

// clientConfig is go-nsq's configuration for the driver's connections.
func clientConfig() *gonsq.Config {
	c := gonsq.NewConfig()
	c.DialTimeout = 5 * time.Second
	// Never drop a message however often it was redelivered (go-nsq
	// finishes it unread after 5 attempts by default).
	c.MaxAttempts = 0
	// A consumer whose nsqd went away tries again every second (go-nsq
	// waits a minute by default).
	c.LookupdPollInterval = time.Second
	return c
}

// silent discards go-nsq's log lines: brokerbench reports the errors its
// calls return instead.
var silent = log.New(io.Discard, "", 0)

// NewProducer implements driver.Driver.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	addr, err := d.tcp(ctx)
	if err != nil {
		return nil, err
	}
	np, err := gonsq.NewProducer(addr, clientConfig())
	if err != nil {
		return nil, err
	}
	np.SetLogger(silent, gonsq.LogLevelError)
	if err := np.Ping(); err != nil {
		np.Stop()
		return nil, fmt.Errorf("nsqd at %s: %w", addr, err)
	}
	p := &producer{np: np, topic: spec.Topic, ack: ack, done: make(chan *gonsq.ProducerTransaction, max(1, spec.MaxInFlight)), acked: make(chan struct{})}
	go p.acknowledge()
	return p, nil
}

// producer publishes to one topic over one connection.
type producer struct {
	np    *gonsq.Producer
	topic string
	ack   driver.AckFunc
	// ackMu makes the AckFunc calls of the acknowledging goroutine and
	// of Send serial.
	ackMu sync.Mutex
	done  chan *gonsq.ProducerTransaction
	acked chan struct{}
	// mu guards closed, so that no Send counts a message pending once
	// Close waits for them.
	mu      sync.Mutex
	closed  bool
	pending sync.WaitGroup
	closing sync.Once
}

// Send implements driver.Producer.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.acknowledgeOne(m, sendError{gonsq.ErrStopped})
		return
	}
	p.pending.Add(1)
	p.mu.Unlock()
	if err := p.np.PublishAsync(p.topic, m.Value, p.done, m); err != nil {
		p.settle(m, sendError{err})
	}
}

// acknowledgeOne calls the AckFunc for m, never at once with another
// call.
func (p *producer) acknowledgeOne(m *driver.Message, err error) {
	p.ackMu.Lock()
	p.ack(m, err)
	p.ackMu.Unlock()
}

// settle calls the AckFunc for a pending message m and counts it done.
func (p *producer) settle(m *driver.Message, err error) {
	p.acknowledgeOne(m, err)
	p.pending.Done()
}

// acknowledge calls the AckFunc for every transaction nsqd answered, in
// order, until Close.
func (p *producer) acknowledge() {
	defer close(p.acked)
	for t := range p.done {
		var err error
		if t.Error != nil {
			err = sendError{t.Error}
		}
		p.settle(t.Args[0].(*driver.Message), err)
	}
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.pending) }

// Close implements driver.Producer: go-nsq fails what nsqd has not
// answered, and every message is acknowledged or failed before it
// returns.
func (p *producer) Close() {
	p.closing.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.np.Stop()
		p.pending.Wait()
		close(p.done)
		<-p.acked
	})
}

// sendError gives NSQ send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error: nsqd's error code (E_BAD_TOPIC, ...), or the
// condition.
func (e sendError) Kind() string {
	var ne net.Error
	switch {
	case errors.Is(e.err, gonsq.ErrStopped):
		return "CLOSED"
	case errors.Is(e.err, gonsq.ErrNotConnected):
		return "NOT_CONNECTED"
	case errors.As(e.err, &ne):
		return "NETWORK"
	}
	if code, _, ok := strings.Cut(e.err.Error(), " "); ok && strings.HasPrefix(code, "E_") {
		return code
	}
	return "other"
}

// NewConsumer implements driver.Driver: a consumer of the subscription's
// channel, which its first consumer creates. A channel receives
// the messages published after it exists (NSQ cannot replay), and the
// runner subscribes before it produces: StartEarliest and StartNew are
// the same here.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := checkName("channel", spec.Subscription); err != nil {
		return nil, err
	}
	addr, err := d.tcp(ctx)
	if err != nil {
		return nil, err
	}
	// go-nsq subscribes without waiting for nsqd's answer: the channel
	// is made here, so that it receives every message published once
	// NewConsumer returns.
	if err := d.call(ctx, http.MethodPost, "/channel/create", url.Values{"topic": {spec.Topic}, "channel": {spec.Subscription}}, nil); err != nil {
		return nil, fmt.Errorf("create channel %q of topic %q: %w", spec.Subscription, spec.Topic, err)
	}
	cfg := clientConfig()
	cfg.MaxInFlight = d.cfg.maxInFlight
	cfg.OutputBufferSize, cfg.OutputBufferTimeout = int64(d.cfg.outputBufferSize), d.cfg.outputBufferTimeout
	nc, err := gonsq.NewConsumer(spec.Topic, spec.Subscription, cfg)
	if err != nil {
		return nil, err
	}
	nc.SetLogger(silent, gonsq.LogLevelError)
	c := &consumer{nc: nc, consume: consume, maxInFlight: d.cfg.maxInFlight}
	nc.AddHandler(c)
	if err := nc.ConnectToNSQD(addr); err != nil {
		nc.Stop()
		return nil, fmt.Errorf("subscribe channel %q of topic %q at %s: %w", spec.Subscription, spec.Topic, addr, err)
	}
	return c, nil
}

// consumer receives a channel's messages on one connection, handled by
// one goroutine of go-nsq's.
type consumer struct {
	nc          *gonsq.Consumer
	consume     driver.ConsumeFunc
	maxInFlight int
	delivery    driver.Delivery
	// mu guards closed: no ConsumeFunc call once Close returned.
	mu      sync.Mutex
	closed  bool
	closing sync.Once
}

// errClosing requeues a message that arrives while the consumer closes.
var errClosing = errors.New("consumer closing")

// HandleMessage hands m to the runner; go-nsq finishes it when it
// returns nil and requeues it otherwise.
func (c *consumer) HandleMessage(m *gonsq.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosing
	}
	c.delivery.Value, c.delivery.Lane = m.Body, driver.NoOrder
	c.consume(&c.delivery)
	return nil
}

// Ready implements driver.Consumer: the channel exists and the
// consumer is subscribed once NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Pause implements driver.Pauser: nsqd sends nothing more (RDY 0).
func (c *consumer) Pause() { c.nc.ChangeMaxInFlight(0) }

// Resume implements driver.Pauser.
func (c *consumer) Resume() { c.nc.ChangeMaxInFlight(c.maxInFlight) }

// closeWait bounds how long Close waits for nsqd to close the
// connection.
const closeWait = 10 * time.Second

// Close implements driver.Consumer: nsqd stops sending and requeues what
// the consumer has not finished.
func (c *consumer) Close() {
	c.closing.Do(func() {
		c.nc.Stop()
		select {
		case <-c.nc.StopChan:
		case <-time.After(closeWait):
		}
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	})
}
