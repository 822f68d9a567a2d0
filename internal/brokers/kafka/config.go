package kafka

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// scope says which clients a Kafka property applies to.
type scope int

const (
	scopeClient scope = iota
	scopeProducer
	scopeConsumer
)

func (s scope) String() string {
	return [...]string{"client", "producer", "consumer"}[s]
}

// setting describes one supported Kafka client property: where it applies,
// Kafka's own default (applied when unset, so results match the Java client's
// behaviour), and how it is checked. Settings with an empty default are left
// to franz-go unless given.
type setting struct {
	scope scope
	def   string
	check func(string) error
	doc   string
}

var (
	isInt = func(lo, hi int64) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("must be an integer from %d to %d", lo, hi)
			}
			return nil
		}
	}
	isBool = func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("must be true or false")
		}
		return nil
	}
	oneOf = func(allowed ...string) func(string) error {
		return func(v string) error {
			for _, a := range allowed {
				if v == a {
					return nil
				}
			}
			return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
		}
	}
	// upperOneOf accepts the allowed values in any case, as Java does
	// for security.protocol.
	upperOneOf = func(allowed ...string) func(string) error {
		return func(v string) error { return oneOf(allowed...)(strings.ToUpper(v)) }
	}
	anything       = func(string) error { return nil }
	byteArraySerde = func(v string) error {
		if strings.HasSuffix(v, ".ByteArraySerializer") || strings.HasSuffix(v, ".ByteArrayDeserializer") {
			return nil
		}
		return fmt.Errorf("brokerbench sends raw bytes: only the ByteArray (de)serializer is accepted")
	}
)

const maxInt32 = 1<<31 - 1

// settings lists every Kafka property brokerbench accepts. Anything else is
// rejected with an error naming the property and file line.
var settings = map[string]setting{
	"bootstrap.servers":       {scopeClient, "", anything, "broker addresses, host:port comma-separated"},
	"client.id":               {scopeClient, "", anything, "client id sent to brokers"},
	"request.timeout.ms":      {scopeClient, "30000", isInt(1, maxInt32), "producer: produce request timeout"},
	"default.api.timeout.ms":  {scopeClient, "60000", isInt(1, maxInt32), "timeout of admin operations"},
	"metadata.max.age.ms":     {scopeClient, "300000", isInt(1, maxInt32), "metadata refresh interval"},
	"connections.max.idle.ms": {scopeClient, "540000", isInt(1, maxInt32), "idle connection timeout"},
	"security.protocol":       {scopeClient, "PLAINTEXT", upperOneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), "TLS and SASL: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"},

	"sasl.mechanism":                        {scopeClient, "", oneOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), "SASL mechanism (GSSAPI and OAUTHBEARER are not supported)"},
	"sasl.jaas.config":                      {scopeClient, "", anything, "JAAS login module with username and password, as Java takes it"},
	"ssl.truststore.location":               {scopeClient, "", anything, "trust store file: PKCS12, JKS or PEM (default: the system's roots)"},
	"ssl.truststore.password":               {scopeClient, "", anything, "trust store password"},
	"ssl.truststore.type":                   {scopeClient, "", oneOf("JKS", "PKCS12", "PEM"), "trust store type (JKS and PKCS12 are told apart by content, as Java does)"},
	"ssl.truststore.certificates":           {scopeClient, "", anything, "trusted certificates in PEM, instead of a trust store file"},
	"ssl.keystore.location":                 {scopeClient, "", anything, "key store file with the client's key and certificate, for mTLS: PKCS12, JKS or PEM"},
	"ssl.keystore.password":                 {scopeClient, "", anything, "key store password"},
	"ssl.keystore.type":                     {scopeClient, "", oneOf("JKS", "PKCS12", "PEM"), "key store type"},
	"ssl.key.password":                      {scopeClient, "", anything, "password of the key in a JKS key store"},
	"ssl.keystore.key":                      {scopeClient, "", anything, "the client's private key in PEM (unencrypted), instead of a key store file"},
	"ssl.keystore.certificate.chain":        {scopeClient, "", anything, "the client's certificate chain in PEM, with ssl.keystore.key"},
	"ssl.endpoint.identification.algorithm": {scopeClient, "https", oneOf("https", ""), "https: check the broker's host name against its certificate; empty: do not"},
	"ssl.protocol":                          {scopeClient, "TLSv1.3", oneOf("TLSv1.2", "TLSv1.3", "TLS"), "highest TLS version used"},
	"ssl.enabled.protocols":                 {scopeClient, "", anything, "TLS versions allowed, comma-separated (default TLSv1.2,TLSv1.3)"},

	"acks":                                  {scopeProducer, "all", oneOf("0", "1", "all", "-1"), "acknowledgements"},
	"linger.ms":                             {scopeProducer, "5", isInt(0, 60000), "batching delay"},
	"batch.size":                            {scopeProducer, "16384", isInt(1, maxInt32), "batch size in bytes"},
	"buffer.memory":                         {scopeProducer, "33554432", isInt(1, 1<<62), "bytes buffered by the producer"},
	"compression.type":                      {scopeProducer, "none", oneOf("none", "gzip", "snappy", "lz4", "zstd"), "batch compression"},
	"max.in.flight.requests.per.connection": {scopeProducer, "5", isInt(1, 1000), "produce requests in flight per broker"},
	"enable.idempotence":                    {scopeProducer, "", isBool, "idempotent producer (default: true when acks=all)"},
	"retries":                               {scopeProducer, "", isInt(0, maxInt32), "record retries (default: unlimited within delivery.timeout.ms)"},
	"delivery.timeout.ms":                   {scopeProducer, "120000", isInt(1, maxInt32), "upper bound on a record's delivery time"},
	"max.request.size":                      {scopeProducer, "1048576", isInt(1, maxInt32), "largest produce request"},
	"key.serializer":                        {scopeProducer, "", byteArraySerde, "must be ByteArraySerializer"},
	"value.serializer":                      {scopeProducer, "", byteArraySerde, "must be ByteArraySerializer"},

	"group.id":                  {scopeConsumer, "", anything, "prefix of the consumer groups brokerbench names per subscription (GROUP-bb-RUN-...), so that prefixed ACLs admit them"},
	"fetch.min.bytes":           {scopeConsumer, "1", isInt(1, maxInt32), "minimum bytes per fetch response"},
	"fetch.max.wait.ms":         {scopeConsumer, "500", isInt(0, maxInt32), "broker wait for fetch.min.bytes"},
	"max.partition.fetch.bytes": {scopeConsumer, "1048576", isInt(1, maxInt32), "bytes per partition per fetch"},
	"fetch.max.bytes":           {scopeConsumer, "52428800", isInt(1, maxInt32), "bytes per fetch response"},
	"auto.offset.reset":         {scopeConsumer, "earliest", oneOf("earliest", "latest"), "where a new group starts (earliest: brokerbench creates fresh topics)"},
	"enable.auto.commit":        {scopeConsumer, "true", isBool, "commit offsets automatically"},
	"auto.commit.interval.ms":   {scopeConsumer, "5000", isInt(1, maxInt32), "auto-commit interval"},
	"session.timeout.ms":        {scopeConsumer, "45000", isInt(1, maxInt32), "group session timeout"},
	"heartbeat.interval.ms":     {scopeConsumer, "3000", isInt(1, maxInt32), "group heartbeat interval"},
	"max.poll.interval.ms":      {scopeConsumer, "300000", isInt(1, maxInt32), "rebalance timeout"},
	"max.poll.records":          {scopeConsumer, "500", isInt(1, maxInt32), "records returned per poll"},
	"isolation.level":           {scopeConsumer, "read_uncommitted", oneOf("read_uncommitted", "read_committed"), "transactional isolation"},
	"key.deserializer":          {scopeConsumer, "", byteArraySerde, "must be ByteArrayDeserializer"},
	"value.deserializer":        {scopeConsumer, "", byteArraySerde, "must be ByteArrayDeserializer"},
}

// config is a validated Kafka driver configuration.
type config struct {
	seeds    []string
	producer workload.Properties // effective producer settings, defaults included
	consumer workload.Properties // effective consumer settings, defaults included
	client   workload.Properties // effective client settings
	topic    workload.Properties
	rf       int
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// secure holds how the admin client, producers and consumers connect.
	secure map[scope]*security
}

// parseConfig validates every property of dc and resolves defaults; local
// are the credentials of the local cluster the driver connects to, if it
// is one brokerbench secured.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	var errs []string
	fail := func(err error) { errs = append(errs, err.Error()) }
	check := func(section string, props workload.Properties, allowed scope) {
		for _, p := range props {
			s, ok := settings[p.Key]
			if !ok {
				fail(p.Error("unsupported Kafka property in %s%s; docs/workloads.md lists the %d supported ones",
					section, workload.Suggest(p.Key, supported()), len(supported())))
				continue
			}
			if allowed != scopeClient && s.scope != scopeClient && s.scope != allowed {
				fail(p.Error("is a %s property; move it to %sConfig", s.scope, s.scope))
				continue
			}
			if err := s.check(p.Value); err != nil {
				fail(p.Error("value %q: %v", p.Value, err))
			}
		}
	}
	check("commonConfig", dc.Common, scopeClient)
	check("producerConfig", dc.Producer, scopeProducer)
	check("consumerConfig", dc.Consumer, scopeConsumer)

	c := &config{topic: dc.Topic, rf: dc.ReplicationFactor}
	resolve := func(sc scope, sections ...workload.Properties) workload.Properties {
		var all workload.Properties
		for _, k := range supported() {
			s := settings[k]
			if s.def != "" && (s.scope == sc || s.scope == scopeClient) {
				all = append(all, workload.Property{Key: k, Value: s.def})
			}
		}
		for _, sec := range sections {
			for _, p := range sec {
				if s, ok := settings[p.Key]; ok && (s.scope == sc || s.scope == scopeClient) {
					all = append(all, p)
				}
			}
		}
		return all.Effective()
	}
	// The admin client takes the producer's connection settings when the
	// common ones do not have them: files made for the Java tools give
	// security settings in producer and consumer properties alone.
	c.client = resolve(scopeClient, dc.Common, dc.Producer)
	c.producer = resolve(scopeProducer, dc.Common, dc.Producer)
	c.consumer = resolve(scopeConsumer, dc.Common, dc.Consumer)

	if len(endpoints) > 0 {
		c.seeds = endpoints
	} else if v, ok := c.client.Get("bootstrap.servers"); ok && v != "" {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.seeds = append(c.seeds, s)
			}
		}
	}
	if len(c.seeds) == 0 {
		errs = append(errs, fmt.Sprintf("%s: no Kafka broker address: set bootstrap.servers in commonConfig or pass --broker HOST:PORT", dc.Source))
	}

	// Cross-checks that the Java client also enforces.
	acks, _ := c.producer.Get("acks")
	if v, ok := dc.Producer.Get("enable.idempotence"); ok && v == "true" {
		if acks != "all" && acks != "-1" {
			errs = append(errs, fmt.Sprintf("%s: enable.idempotence=true needs acks=all (got acks=%s)", dc.Source, acks))
		}
		if n, _ := strconv.Atoi(must(c.producer.Get("max.in.flight.requests.per.connection"))); n > 5 {
			errs = append(errs, fmt.Sprintf("%s: enable.idempotence=true allows at most 5 max.in.flight.requests.per.connection (got %d)", dc.Source, n))
		}
	}
	if len(errs) == 0 {
		c.secure = map[scope]*security{}
		for sc, p := range map[scope]workload.Properties{scopeClient: c.client, scopeProducer: c.producer, scopeConsumer: c.consumer} {
			sec, err := parseSecurity(p, local)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %s settings: %v", dc.Source, sc, err))
				continue
			}
			c.secure[sc] = sec
		}
		sort.Strings(errs)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", workload.ErrInvalid, strings.Join(errs, "\n"))
	}
	return c, nil
}

func must(v string, _ bool) string { return v }

func supported() []string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ms(p workload.Properties, key string) time.Duration {
	n, _ := strconv.ParseInt(must(p.Get(key)), 10, 64)
	return time.Duration(n) * time.Millisecond
}

func num(p workload.Properties, key string) int64 {
	n, _ := strconv.ParseInt(must(p.Get(key)), 10, 64)
	return n
}

// idempotent reports whether the producer uses idempotent writes: as in the
// Java client, on by default only when acks=all.
func (c *config) idempotent() bool {
	if v, ok := c.producer.Get("enable.idempotence"); ok {
		return v == "true"
	}
	acks := must(c.producer.Get("acks"))
	return acks == "all" || acks == "-1"
}

// clientOpts returns the options every client (admin, producer, consumer)
// gets: sc says which.
func (c *config) clientOpts(sc scope) []kgo.Opt {
	p := map[scope]workload.Properties{scopeClient: c.client, scopeProducer: c.producer, scopeConsumer: c.consumer}[sc]
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.seeds...),
		kgo.MetadataMaxAge(ms(p, "metadata.max.age.ms")),
		kgo.ConnIdleTimeout(ms(p, "connections.max.idle.ms")),
	}
	if id, ok := p.Get("client.id"); ok && id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	dial := c.dial
	sec := c.secure[sc]
	if sec.tls != nil {
		if dial == nil {
			d := &net.Dialer{Timeout: 10 * time.Second}
			dial = d.DialContext
		}
		dial = driver.DialTLS(dial, sec.tls)
	}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	if sec.mechanism != nil {
		opts = append(opts, kgo.SASL(sec.mechanism))
	}
	return opts
}

// producerOpts maps the producer settings onto franz-go. maxMessage is the
// largest value the producer sends; maxInFlight the most records the runner
// keeps in flight.
func (c *config) producerOpts(maxMessage, maxInFlight int) []kgo.Opt {
	p := c.producer
	opts := c.clientOpts(scopeProducer)
	switch must(p.Get("acks")) {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !c.idempotent() {
		opts = append(opts, kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(int(num(p, "max.in.flight.requests.per.connection"))))
	}
	batch := num(p, "batch.size")
	// A record larger than batch.size goes in a batch of its own, as in the
	// Java client.
	batchMax := max(batch, int64(maxMessage)+512)
	opts = append(opts,
		kgo.ProducerLinger(ms(p, "linger.ms")),
		kgo.ProducerBatchMaxBytes(int32(min(batchMax, maxInt32))),
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(int(batch), true, true, nil)),
		kgo.MaxBufferedBytes(int(num(p, "buffer.memory"))),
		kgo.MaxBufferedRecords(max(maxInFlight, 1)),
		kgo.ProduceRequestTimeout(ms(p, "request.timeout.ms")),
		kgo.RecordDeliveryTimeout(ms(p, "delivery.timeout.ms")),
		kgo.BrokerMaxWriteBytes(int32(min(max(num(p, "max.request.size"), batchMax)+(1<<20), maxInt32))),
	)
	if r, ok := p.Get("retries"); ok {
		n, _ := strconv.Atoi(r)
		opts = append(opts, kgo.RecordRetries(n))
	}
	codec := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}[must(p.Get("compression.type"))]
	return append(opts, kgo.ProducerBatchCompression(codec))
}

// group is the consumer group of a subscription: its name, after the
// prefix group.id gives (managed clusters admit groups by prefix).
func (c *config) group(subscription string) string {
	if prefix, ok := c.consumer.Get("group.id"); ok && prefix != "" {
		return prefix + "-" + subscription
	}
	return subscription
}

// consumerOpts maps the consumer settings onto franz-go for a member of
// group reading topic from start (a group without committed offsets; with
// auto.offset.reset=latest, always from the end); readCommitted, or
// isolation.level=read_committed, leaves out aborted transactions.
func (c *config) consumerOpts(topic, group string, start driver.StartPosition, readCommitted bool) []kgo.Opt {
	p := c.consumer
	opts := c.clientOpts(scopeConsumer)
	reset := kgo.NewOffset().AtStart()
	if start == driver.StartNew || must(p.Get("auto.offset.reset")) == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	opts = append(opts,
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMinBytes(int32(num(p, "fetch.min.bytes"))),
		kgo.FetchMaxWait(ms(p, "fetch.max.wait.ms")),
		kgo.FetchMaxPartitionBytes(int32(num(p, "max.partition.fetch.bytes"))),
		kgo.FetchMaxBytes(int32(num(p, "fetch.max.bytes"))),
		kgo.SessionTimeout(ms(p, "session.timeout.ms")),
		kgo.HeartbeatInterval(ms(p, "heartbeat.interval.ms")),
		kgo.RebalanceTimeout(ms(p, "max.poll.interval.ms")),
		kgo.AutoCommitInterval(ms(p, "auto.commit.interval.ms")),
	)
	if readCommitted || must(p.Get("isolation.level")) == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if must(p.Get("enable.auto.commit")) == "false" {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	return opts
}
