// Package redis is brokerbench's Redis Streams: its driver, on go-redis;
// the local server brokerbench starts (Kind); the reading of a server's
// INFO (ParseInfo); and the module that registers them (module.go).
//
// A topic of N partitions is N streams, TOPIC:0 to TOPIC:N-1 (each a lane
// of order), and a key TOPIC:meta that records it. A producer picks the
// partition by key hash, or in turn without a key, and sends XADDs in
// pipelines: one round trip carries every message waiting, up to
// maxPipeline. A subscription is a consumer group on every partition
// stream; its consumers read with XREADGROUP and acknowledge with XACK
// after the runner consumed what they read.
package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	// go-redis logs every failed dial of its pool to stderr, a line per
	// attempt; brokerbench reports the errors its calls return instead.
	goredis.SetLogger(silent{})
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// localListener names the listener of a local Redis a config connects
// to: "tls" with tls: true, else "plain".
func localListener(dc *workload.DriverConfig) string {
	if v, ok := dc.Common.Get("tls"); ok && v == "true" {
		return "tls"
	}
	return "plain"
}

// silent is a go-redis logger that writes nothing.
type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

// settings are the driver's settings by section, with their defaults.
var settings = map[string]map[string]string{
	"common": {
		"addr": "127.0.0.1:6379", "username": "", "password": "",
		// OMB's Redis driver file.
		"redisHost": "", "redisPort": "", "redisUser": "", "redisPass": "", "jedisPoolMaxTotal": "", "jedisPoolMaxIdle": "",
	},
	"topic":    {"maxLen": "0"},                        // approximate MAXLEN of each stream (0: none)
	"producer": {"maxPipeline": "100"},                 // XADDs per round trip
	"consumer": {"readCount": "500", "blockMs": "100"}, // XREADGROUP COUNT and BLOCK
}

type config struct {
	addr, username, password string
	tls                      *tls.Config // nil: plain connections
	maxLen                   int64
	maxPipeline, readCount   int
	block                    time.Duration
	effective                map[string]workload.Properties
}

// parseConfig validates every setting of dc; local are the credentials of
// a local server brokerbench secured, used where dc gives none.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "Redis", settings)
	c := &config{addr: s.String("common", "addr"), username: s.String("common", "username"), password: s.String("common", "password")}
	if h := s.String("common", "redisHost"); h != "" {
		port := s.String("common", "redisPort")
		if port == "" {
			port = "6379"
		}
		c.addr = net.JoinHostPort(h, port)
	}
	if u := s.String("common", "redisUser"); u != "" {
		c.username = u
	}
	if pw := s.String("common", "redisPass"); pw != "" {
		c.password = pw
	}
	for _, k := range []string{"jedisPoolMaxTotal", "jedisPoolMaxIdle"} {
		if s.String("common", k) != "" {
			s.Int("common", k, 0) // checked; each client has its own connection, no pool to size
		}
	}
	var errs []error
	if len(endpoints) > 0 {
		c.addr = endpoints[0]
		if len(endpoints) > 1 {
			errs = append(errs, fmt.Errorf("%s: the Redis driver connects to one server; got %d addresses", dc.Source, len(endpoints)))
		}
	}
	if local != nil && c.username == "" && c.password == "" {
		c.username, c.password = local.Username, local.Password
	}
	c.tls = driver.ClientTLS(s, false, local)
	c.maxLen = int64(s.Int("topic", "maxLen", 0))
	c.maxPipeline = s.Int("producer", "maxPipeline", 1)
	c.readCount = s.Int("consumer", "readCount", 1)
	c.block = time.Duration(s.Int("consumer", "blockMs", 1)) * time.Millisecond
	if err := errors.Join(append(errs, s.Err())...); err != nil {
		return nil, err
	}
	c.effective = s.Effective("addr", "username", "password", "redisHost", "redisPort", "redisUser", "redisPass", "tlsTrustStorePassword", "tlsKeyStorePassword")
	c.effective["common"] = append(workload.Properties{{Key: "addr", Value: c.addr}, {Key: "username", Value: c.username}}, c.effective["common"]...)
	if c.password != "" {
		c.effective["common"] = append(c.effective["common"], workload.Property{Key: "password", Value: "(set)"})
	}
	return c, nil
}

// Driver is a connection to one Redis server.
type Driver struct {
	cfg  *config
	opts driver.Options
	rdb  *goredis.Client // admin client
}

var (
	_ driver.WrittenCounter = (*Driver)(nil)
	_ driver.Pauser         = (*consumer)(nil)
)

// New validates dc; connections are made on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, opts: opts}
	d.rdb = d.client(2)
	return d, nil
}

// client returns a client of up to pool connections.
func (d *Driver) client(pool int) *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: d.cfg.addr, Username: d.cfg.username, Password: d.cfg.password,
		PoolSize: pool, DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaxRetries: -1, Dialer: d.dial})
}

// dial connects through the driver options, over TLS if configured.
func (d *Driver) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.cfg.tls != nil {
		return driver.DialTLS(d.opts.Dial, d.cfg.tls)(ctx, network, addr)
	}
	return d.opts.Dial(ctx, network, addr)
}

// refused marks err as driver.ErrRefused, with advice, when the server
// refused the credentials or the TLS handshake failed.
func refused(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "NOAUTH"), strings.Contains(msg, "NOPERM"):
		return driver.Refused(fmt.Errorf("%w: check the username and password", err))
	}
	if advice := driver.TLSAdvice(err); advice != "" {
		return driver.Refused(fmt.Errorf("%w: %s (tlsTrustStore, tlsVerifyHostname, tls)", err, advice))
	}
	return err
}

func metaKey(topic string) string                  { return topic + ":meta" }
func streamKey(topic string, partition int) string { return topic + ":" + strconv.Itoa(partition) }

// BrokerVersion implements driver.Driver.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	info, err := d.rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", refused(fmt.Errorf("Redis at %s: %w", d.cfg.addr, err))
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "Redis " + v, nil
		}
	}
	return "Redis (version not reported)", nil
}

// CreateTopic implements driver.Driver: the topic's record and one empty
// stream per partition.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	created, err := d.rdb.HSetNX(ctx, metaKey(spec.Name), "partitions", spec.Partitions).Result()
	if err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	if !created {
		return fmt.Errorf("create topic %q: it exists", spec.Name)
	}
	for p := range spec.Partitions {
		// MKSTREAM creates the empty stream; the group is not needed.
		key := streamKey(spec.Name, p)
		if err := d.rdb.XGroupCreateMkStream(ctx, key, "bb-create", "$").Err(); err != nil {
			return fmt.Errorf("create stream %q: %w", key, err)
		}
		if err := d.rdb.XGroupDestroy(ctx, key, "bb-create").Err(); err != nil {
			return fmt.Errorf("create stream %q: %w", key, err)
		}
	}
	return nil
}

// partitions returns the partitions of a topic, from its record.
func (d *Driver) partitions(ctx context.Context, topic string) (int, error) {
	v, err := d.rdb.HGet(ctx, metaKey(topic), "partitions").Result()
	if errors.Is(err, goredis.Nil) {
		return 0, fmt.Errorf("topic %q: %w", topic, driver.ErrTopicNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("topic %q: %w", topic, err)
	}
	return strconv.Atoi(v)
}

// DeleteTopic implements driver.Driver.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	n, err := d.partitions(ctx, name)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	keys := []string{metaKey(name)}
	for p := range n {
		keys = append(keys, streamKey(name, p))
	}
	return d.rdb.Del(ctx, keys...).Err()
}

// Written implements driver.WrittenCounter: the entries ever added to the
// topic's streams (XINFO STREAM entries-added, Redis 7), which trimming
// does not lower.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	n, err := d.partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	var total int64
	for p := range n {
		info, err := d.rdb.XInfoStream(ctx, streamKey(topic, p)).Result()
		if err != nil {
			return 0, fmt.Errorf("stream %q: %w", streamKey(topic, p), err)
		}
		total += info.EntriesAdded
	}
	return total, nil
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() { _ = d.rdb.Close() }

// NewProducer implements driver.Driver.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	n, err := d.partitions(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	p := &producer{rdb: d.client(1), maxPipeline: d.cfg.maxPipeline, ack: ack,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if d.cfg.maxLen > 0 {
		p.trim = []any{"maxlen", "~", d.cfg.maxLen}
	}
	for i := range n {
		p.keys = append(p.keys, streamKey(spec.Topic, i))
	}
	go p.run()
	return p, nil
}

// producer sends XADDs from one goroutine (run). Send only appends to
// waiting under mu and wakes run when it may be idle: no channel
// operation per message, and one wake-up per pipeline at most.
type producer struct {
	rdb         *goredis.Client
	keys        []any // stream key of each partition, as XADD arguments
	trim        []any // MAXLEN ~ n, or none
	spread      driver.Spreader
	maxPipeline int
	ack         driver.AckFunc
	wake        chan struct{} // a token when waiting grew from empty, or on Close
	done        chan struct{} // closed when run returns
	closing     sync.Once
	pending     sync.WaitGroup

	mu      sync.Mutex
	waiting []*driver.Message // sent, not yet taken by run
	closed  bool
}

// errClosed fails messages sent after Close began.
var errClosed = errors.New("producer closed")

// Send implements driver.Producer. It never blocks on the broker: the
// runner bounds the messages in flight.
func (p *producer) Send(ctx context.Context, m *driver.Message) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.ack(m, sendError{errClosed})
		return
	}
	p.pending.Add(1)
	p.waiting = append(p.waiting, m)
	first := len(p.waiting) == 1
	p.mu.Unlock()
	if first {
		p.signal()
	}
}

// signal leaves a token for run, unless one is there already.
func (p *producer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run takes every message waiting, sends them in pipelines of up to
// maxPipeline and acknowledges each in order when its pipeline returns:
// one goroutine, never concurrent acks. After Close it sends what is
// still waiting, then returns.
func (p *producer) run() {
	defer close(p.done)
	var taken []*driver.Message
	cmds := make([]*goredis.StringCmd, 0, p.maxPipeline)
	for {
		p.mu.Lock()
		for len(p.waiting) == 0 && !p.closed {
			p.mu.Unlock()
			<-p.wake
			p.mu.Lock()
		}
		if len(p.waiting) == 0 {
			p.mu.Unlock()
			return
		}
		taken, p.waiting = p.waiting, taken[:0]
		p.mu.Unlock()
		for rest := taken; len(rest) > 0; {
			n := min(len(rest), p.maxPipeline)
			cmds = p.pipeline(rest[:n], cmds[:0])
			rest = rest[n:]
		}
	}
}

// pipeline sends batch in one round trip and acknowledges each message;
// cmds is reused storage for the commands.
func (p *producer) pipeline(batch []*driver.Message, cmds []*goredis.StringCmd) []*goredis.StringCmd {
	ctx := context.Background()
	pipe := p.rdb.Pipeline()
	for _, m := range batch {
		cmd := p.xadd(ctx, m)
		_ = pipe.Process(ctx, cmd)
		cmds = append(cmds, cmd)
	}
	_, _ = pipe.Exec(ctx)
	for i, m := range batch {
		var err error
		if e := cmds[i].Err(); e != nil {
			err = sendError{e}
		}
		p.ack(m, err)
		p.pending.Done()
	}
	return cmds
}

// xadd is the command that appends m to its partition's stream as the
// field v: XADD key [MAXLEN ~ n] * v value. The command is made at m's
// first send and kept in m.DriverState; a later send of m (the runner
// reuses its messages) sets its key and value in place, so sending
// allocates no command. The key and the trim are boxed once, at
// NewProducer.
func (p *producer) xadd(ctx context.Context, m *driver.Message) *goredis.StringCmd {
	key := p.keys[p.spread.Partition(m.Key, len(p.keys))]
	cmd, ok := m.DriverState.(*goredis.StringCmd)
	if !ok {
		args := append(append([]any{"xadd", key}, p.trim...), "*", "v", m.Value)
		cmd = goredis.NewStringCmd(ctx, args...)
		m.DriverState = cmd
		return cmd
	}
	args := cmd.Args()
	args[1], args[len(args)-1] = key, m.Value
	cmd.SetErr(nil)
	return cmd
}

// Flush implements driver.Producer.
func (p *producer) Flush(ctx context.Context) error { return driver.WaitIdle(ctx, &p.pending) }

// Close implements driver.Producer: messages waiting are still sent and
// acknowledged (each pipeline is bounded by the client's timeouts) before
// it returns.
func (p *producer) Close() {
	p.closing.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.signal()
		<-p.done
		_ = p.rdb.Close()
	})
}

// sendError gives Redis send errors a short kind for failure counts.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// Kind names the error: the Redis error prefix (OOM, NOGROUP, ...), or
// the condition.
func (e sendError) Kind() string {
	var re goredis.Error
	switch {
	case errors.Is(e.err, errClosed), errors.Is(e.err, goredis.ErrClosed):
		return "CLOSED"
	case errors.As(e.err, &re):
		word, _, _ := strings.Cut(re.Error(), " ")
		return word
	case errors.Is(e.err, context.DeadlineExceeded), errors.Is(e.err, context.Canceled):
		return "TIMEOUT"
	}
	var ne net.Error
	if errors.As(e.err, &ne) {
		return "NETWORK"
	}
	return "other"
}

var consumerSeq atomic.Int64

// NewConsumer implements driver.Driver: the subscription's consumer group
// on every partition stream, created by its first member (from the
// streams' start, or their end for StartNew).
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	n, err := d.partitions(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	start := "0"
	if spec.Start == driver.StartNew {
		start = "$"
	}
	c := &consumer{rdb: d.client(1), group: spec.Subscription, name: fmt.Sprintf("bb-%d", consumerSeq.Add(1)),
		consume: consume, count: int64(d.cfg.readCount), block: d.cfg.block, stop: make(chan struct{}), done: make(chan struct{})}
	for p := range n {
		key := streamKey(spec.Topic, p)
		if err := d.rdb.XGroupCreate(ctx, key, spec.Subscription, start).Err(); err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			_ = c.rdb.Close()
			return nil, fmt.Errorf("consumer group %q on %q: %w", spec.Subscription, key, err)
		}
		c.keys = append(c.keys, key)
	}
	c.streams = append(append([]string{}, c.keys...), repeat(">", n)...)
	go c.run()
	return c, nil
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

type consumer struct {
	rdb         *goredis.Client
	group, name string
	keys        []string
	streams     []string // keys, then ">" for each
	consume     driver.ConsumeFunc
	count       int64
	block       time.Duration
	stop, done  chan struct{}
	// PauseGate implements driver.Pauser: no more reads until Resume.
	driver.PauseGate
	closing sync.Once
}

// run reads new entries for its group, hands each to the runner, then
// acknowledges what it read.
func (c *consumer) run() {
	defer close(c.done)
	var d driver.Delivery
	lanes := map[string]int32{}
	for i, k := range c.keys {
		lanes[k] = int32(i)
	}
	ctx := context.Background()
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		c.Wait(c.stop)
		res, err := c.rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: c.group, Consumer: c.name, Streams: c.streams, Count: c.count, Block: c.block}).Result()
		if err != nil {
			if !errors.Is(err, goredis.Nil) {
				select {
				case <-c.stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			continue
		}
		for _, s := range res {
			ids := make([]string, 0, len(s.Messages))
			for _, m := range s.Messages {
				v, _ := m.Values["v"].(string)
				d.Value, d.Lane = []byte(v), lanes[s.Stream]
				c.consume(&d)
				ids = append(ids, m.ID)
			}
			if len(ids) > 0 {
				_ = c.rdb.XAck(ctx, s.Stream, c.group, ids...).Err()
			}
		}
	}
}

// Ready implements driver.Consumer: the group exists once NewConsumer
// returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Close implements driver.Consumer: it waits for a blocked read to return
// (at most blockMs).
func (c *consumer) Close() {
	c.closing.Do(func() {
		close(c.stop)
		<-c.done
		_ = c.rdb.Close()
	})
}
