// Package nsq is brokerbench's NSQ: its driver, on go-nsq; the local
// nsqd, or cluster of nsqd nodes and nsqlookupd, brokerbench starts
// (Kind); the reading of nsqd's /stats (ParseStats); and the module that
// registers them (module.go).
//
// A topic is an NSQ topic, one stream without partitions, made on every
// nsqd; a subscription is a channel of the topic, whose consumers share
// its messages, and every channel receives every message published
// after it exists. The driver reaches each nsqd's HTTP API (topics,
// channels, counts) at its endpoint and learns the TCP port its
// producers and consumers connect to from /info. Each producer
// publishes to one nsqd, the next one round-robin, asynchronously (PUB,
// each acknowledged by nsqd in order); each consumer connects to every
// nsqd, through nsqlookupd when the driver is given one, receives up to
// maxInFlight messages at once and finishes (FIN) each after the runner
// consumed it. NSQ promises no order, and redelivers a message whose
// consumer did not finish it in time: deliveries carry driver.NoOrder,
// and the runner counts duplicates.
package nsq

import (
	"context"
	"crypto/tls"
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
	"sync/atomic"
	"time"

	gonsq "github.com/nsqio/go-nsq"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/pki"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	for k, v := range driver.TLSDefaults {
		settings["common"][k] = v
	}
}

// settings are the driver's settings by section, with their defaults.
// commonConfig takes driver.TLSDefaults too: with tls, the nsqd
// addresses name their HTTPS API.
var settings = map[string]map[string]string{
	"common": {
		// Every nsqd's HTTP API (its HTTPS API with tls, or written
		// https://HOST:PORT), comma-separated, and nsqlookupd's, always
		// plain HTTP ("": consumers connect to every nsqd directly).
		"nsqdHttpAddress": "127.0.0.1:4151", "lookupdHttpAddress": "",
		// OMB's NSQ driver file: nsqd's host (its HTTP API on 4151, its
		// HTTPS API on 4152 with tls), and nsqlookupd's (its HTTP API on
		// 4161).
		"nsqdHost": "", "lookupHost": "",
	},
	"consumer": {
		"maxInFlight": "1000", // messages a consumer holds unfinished (RDY)
		// nsqd's buffering of what it sends a consumer: flushed when full
		// or after the timeout (go-nsq's defaults).
		"outputBufferSize": "16384", "outputBufferTimeoutMs": "250",
	},
}

// lookupdScheme marks, among the addresses a driver is given, the HTTP
// API of nsqlookupd ("nsqlookupd://127.0.2.1:4161"); the others are
// nsqd's.
const lookupdScheme = "nsqlookupd://"

// httpsScheme marks an nsqd address as its HTTPS API, which turns TLS on
// as tls: true does.
const httpsScheme = "https://"

// NSQ's usual ports of nsqd's HTTP and HTTPS APIs and of nsqlookupd's
// HTTP API, which OMB's nsqdHost and lookupHost imply.
const (
	nsqdHTTPPort    = "4151"
	nsqdHTTPSPort   = "4152"
	lookupdHTTPPort = "4161"
)

// secretKeys are settings that never reach an output.
var secretKeys = []string{"tlsTrustStorePassword", "tlsKeyStorePassword"}

type config struct {
	nsqds   []string // every nsqd's HTTP (or, with tls, HTTPS) address, host:port
	lookupd string   // nsqlookupd's HTTP address; "": none
	// tls, when not nil, is the TLS of every connection to nsqd: its
	// HTTPS API and its TCP port (TLS negotiated when connecting);
	// nsqlookupd has no TLS.
	tls                 *tls.Config
	maxInFlight         int
	outputBufferSize    int // -1: none
	outputBufferTimeout time.Duration
	effective           map[string]workload.Properties
}

// parseConfig validates every setting of dc. endpoints, when given,
// replace the config's addresses: nsqd HTTP (or HTTPS) addresses, and at
// most one nsqlookupd HTTP address marked with lookupdScheme. local, if
// set, are the credentials of a local cluster brokerbench secured: with
// TLS on, its authority is trusted and its client certificate presented
// when the config gives no trust or key store.
func parseConfig(dc *workload.DriverConfig, endpoints []string, local *driver.Credentials) (*config, error) {
	s := driver.ParseSettings(dc, "NSQ", settings)
	c := &config{nsqds: splitList(s.String("common", "nsqdHttpAddress")), lookupd: s.String("common", "lookupdHttpAddress")}
	if h := s.String("common", "nsqdHost"); h != "" {
		port := nsqdHTTPPort
		if s.Bool("common", "tls") {
			port = nsqdHTTPSPort
		}
		c.nsqds = []string{net.JoinHostPort(h, port)}
	}
	if h := s.String("common", "lookupHost"); h != "" {
		c.lookupd = net.JoinHostPort(h, lookupdHTTPPort)
	}
	var errs []error
	if len(endpoints) > 0 {
		c.nsqds, c.lookupd = nil, ""
		for _, e := range endpoints {
			addr, isLookupd := strings.CutPrefix(e, lookupdScheme)
			switch {
			case !isLookupd:
				c.nsqds = append(c.nsqds, e)
			case c.lookupd != "":
				errs = append(errs, fmt.Errorf("%s: the NSQ driver takes one nsqlookupd; got %s and %s", dc.Source, c.lookupd, addr))
			default:
				c.lookupd = addr
			}
		}
	}
	if len(c.nsqds) == 0 {
		errs = append(errs, fmt.Errorf("%s: the NSQ driver needs the HTTP address of at least one nsqd; got only nsqlookupd's", dc.Source))
	}
	https := 0
	for i, a := range c.nsqds {
		if addr, ok := strings.CutPrefix(a, httpsScheme); ok {
			c.nsqds[i] = addr
			https++
		}
		if err := checkHostPort(c.nsqds[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: nsqd HTTP address %q: %w", dc.Source, a, err))
		}
	}
	if https > 0 && https < len(c.nsqds) {
		errs = append(errs, fmt.Errorf("%s: %d of the %d nsqd addresses are written %sHOST:PORT: the driver reaches every nsqd over HTTPS or none; write them all so, or set tls: true and give every nsqd's HTTPS address",
			dc.Source, https, len(c.nsqds), httpsScheme))
	}
	if c.lookupd != "" {
		if err := checkHostPort(c.lookupd); err != nil {
			errs = append(errs, fmt.Errorf("%s: nsqlookupd HTTP address %q: %w", dc.Source, c.lookupd, err))
		}
	}
	if c.tls = driver.ClientTLS(s, https > 0, local); c.tls != nil && len(c.tls.Certificates) == 0 && local != nil && local.CertFile != "" {
		// A secured local nsqd authenticates clients by their certificate.
		cert, err := pki.ReadKeyStore(local.CertFile, pki.TypePEM, "", "")
		if err != nil {
			s.Fail("common", "tlsKeyStore", "the local cluster's client certificate: %v", err)
		}
		c.tls.Certificates = []tls.Certificate{cert}
	}
	c.maxInFlight = s.Int("consumer", "maxInFlight", 1)
	if c.outputBufferSize = s.Int("consumer", "outputBufferSize", -1); c.outputBufferSize >= 0 && c.outputBufferSize < 64 {
		s.Fail("consumer", "outputBufferSize", "nsqd takes -1 (no buffer) or 64 bytes and more")
	}
	c.outputBufferTimeout = time.Duration(s.Int("consumer", "outputBufferTimeoutMs", 1)) * time.Millisecond
	if err := errors.Join(append(errs, s.Err())...); err != nil {
		return nil, err
	}
	c.effective = s.Effective(append([]string{"nsqdHttpAddress", "lookupdHttpAddress", "nsqdHost", "lookupHost"}, secretKeys...)...)
	c.effective["common"] = append(workload.Properties{{Key: "nsqdHttpAddress", Value: strings.Join(c.nsqds, ",")},
		{Key: "lookupdHttpAddress", Value: c.lookupd}}, c.effective["common"]...)
	for i, p := range c.effective["common"] {
		if p.Key == "tls" {
			c.effective["common"][i].Value = strconv.FormatBool(c.tls != nil) // an https:// address turns it on
		}
	}
	return c, nil
}

// checkHostPort reports why addr is not a host:port the driver can
// put after "http://".
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return fmt.Errorf("give it as host:port (127.0.0.1:4151): %w", err)
	case host == "" || port == "":
		return errors.New("give it as host:port (127.0.0.1:4151), with both parts")
	case strings.ContainsAny(host, "/?#@ "):
		return errors.New("the host holds a character that cannot be in one; give it as host:port (127.0.0.1:4151)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}

// splitList splits a comma-separated list, leaving out empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Driver is a connection to the nsqd nodes of one NSQ cluster (one or
// more), and to its nsqlookupd if it has one.
type Driver struct {
	cfg   *config
	opts  driver.Options
	http  *http.Client
	nodes []*nsqd
	// produced counts the producers made, each on the next node.
	produced atomic.Uint64
}

// nsqd is one nsqd node the driver reaches.
type nsqd struct {
	httpAddr string

	mu      sync.Mutex
	tcpAddr string // nsqd's TCP address, from /info once known
}

var (
	_ driver.ResettingWrittenCounter = (*Driver)(nil)
	_ driver.Pauser                  = (*consumer)(nil)
)

// New validates dc; the nsqd nodes are reached on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, opts: opts,
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: opts.Dial, TLSClientConfig: cfg.tls}}}
	for _, addr := range cfg.nsqds {
		d.nodes = append(d.nodes, &nsqd{httpAddr: addr})
	}
	return d, nil
}

// apiError is an error status of nsqd's HTTP API, with its message
// ("TOPIC_NOT_FOUND").
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("nsqd answered %d %s", e.status, e.message) }

// notFound reports whether err is nsqd's answer that what was asked
// for does not exist.
func notFound(err error) bool {
	var e *apiError
	return errors.As(err, &e) && e.status == http.StatusNotFound
}

// call sends an HTTP request to the API of the nsqd at addr, over HTTPS
// when the driver has TLS, and decodes a JSON answer into out, when out
// is not nil.
func (d *Driver) call(ctx context.Context, addr, method, path string, query url.Values, out any) error {
	scheme := "http"
	if d.cfg.tls != nil {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: addr, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		if advice := tlsAdvice(err); advice != "" {
			return driver.Refused(fmt.Errorf("nsqd at %s: %w: %s", addr, err, advice))
		}
		return fmt.Errorf("nsqd at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("nsqd at %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message   string
			HTTPSPort int `json:"https_port"`
		}
		if json.Unmarshal(body, &e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		err := fmt.Errorf("nsqd at %s: %w", addr, &apiError{status: resp.StatusCode, message: e.Message})
		if resp.StatusCode == http.StatusForbidden && e.Message == "TLS_REQUIRED" {
			return driver.Refused(fmt.Errorf("%w: it takes TLS clients only: set tls: true in commonConfig and give its HTTPS API (port %d) as its address, "+
				"with its authority in tlsTrustStore and, if it checks clients' certificates, one in tlsKeyStore", err, e.HTTPSPort))
		}
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("nsqd at %s, %s: %w", addr, path, err)
	}
	return nil
}

// callEach sends the same request to every nsqd, one after another, and
// returns their errors, in the nodes' order (nil for a success).
func (d *Driver) callEach(ctx context.Context, method, path string, query url.Values) []error {
	errs := make([]error, len(d.nodes))
	for i, n := range d.nodes {
		errs[i] = d.call(ctx, n.httpAddr, method, path, query, nil)
	}
	return errs
}

// info is what brokerbench reads of nsqd's /info.
type info struct {
	Version string `json:"version"`
	TCPPort int    `json:"tcp_port"`
}

// BrokerVersion implements driver.Driver: the first nsqd's.
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	var in info
	if err := d.call(ctx, d.nodes[0].httpAddr, http.MethodGet, "/info", nil, &in); err != nil {
		return "", err
	}
	return "NSQ " + in.Version, nil
}

// tcp returns node n's TCP address: its HTTP address's host with the
// TCP port nsqd's /info gives (its broadcast address may be a host name
// the client cannot resolve).
func (d *Driver) tcp(ctx context.Context, n *nsqd) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tcpAddr != "" {
		return n.tcpAddr, nil
	}
	var in info
	if err := d.call(ctx, n.httpAddr, http.MethodGet, "/info", nil, &in); err != nil {
		return "", err
	}
	if d.cfg.tls == nil {
		if err := d.plainTCP(ctx, n); err != nil {
			return "", err
		}
	}
	host, _, err := net.SplitHostPort(n.httpAddr)
	if err != nil {
		return "", fmt.Errorf("nsqdHttpAddress %q: %w", n.httpAddr, err)
	}
	if ip, ok := d.opts.Hosts[host]; ok {
		host = ip
	}
	n.tcpAddr = net.JoinHostPort(host, strconv.Itoa(in.TCPPort))
	return n.tcpAddr, nil
}

// plainTCP returns an error if node n requires TLS on its TCP port
// (--tls-required=tcp-https serves its HTTP API in plain text still): a
// plain connection is refused every command there, and go-nsq v1.1.0's
// producer panics on the error nsqd answers its first NOP with.
func (d *Driver) plainTCP(ctx context.Context, n *nsqd) error {
	var required int
	if err := d.call(ctx, n.httpAddr, http.MethodGet, "/config/tls_required", nil, &required); err != nil {
		return err
	}
	if required != 0 {
		return driver.Refused(fmt.Errorf("nsqd at %s takes TLS clients only on its TCP port (--tls-required): set tls: true in commonConfig and give its HTTPS API as its address, "+
			"with its authority in tlsTrustStore and, if it checks clients' certificates, one in tlsKeyStore", n.httpAddr))
	}
	return nil
}

// validName is what nsqd accepts as a topic or channel name.
var validName = regexp.MustCompile(`^[.a-zA-Z0-9_-]{1,64}$`)

func checkName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("NSQ %s name %q: nsqd takes 1 to 64 letters, digits, '.', '_' and '-'", what, name)
	}
	return nil
}

// CreateTopic implements driver.Driver: the topic on every nsqd, each
// of which registers it with nsqlookupd. It has no channel until a
// consumer subscribes; nsqd keeps what is published before that for the
// first channel.
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := checkName("topic", spec.Name); err != nil {
		return err
	}
	if err := errors.Join(d.callEach(ctx, http.MethodPost, "/topic/create", url.Values{"topic": {spec.Name}})...); err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver: the topic, its channels and what
// they hold, on every nsqd; driver.ErrTopicNotFound when no nsqd has
// it.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	var errs []error
	missing := 0
	for _, err := range d.callEach(ctx, http.MethodPost, "/topic/delete", url.Values{"topic": {name}}) {
		if notFound(err) {
			missing++
		} else {
			errs = append(errs, err)
		}
	}
	if missing == len(d.nodes) {
		return fmt.Errorf("delete topic %q: %w", name, driver.ErrTopicNotFound)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// Written implements driver.WrittenCounter: the topic's message_count
// in the /stats of every nsqd that has it, summed: every message
// published to it, which consumption does not lower.
func (d *Driver) Written(ctx context.Context, topic string) (int64, error) {
	var sum int64
	found := false
	for _, n := range d.nodes {
		var st stats
		if err := d.call(ctx, n.httpAddr, http.MethodGet, "/stats", url.Values{"format": {"json"}, "topic": {topic}, "include_clients": {"false"}}, &st); err != nil {
			return 0, fmt.Errorf("topic %q: %w", topic, err)
		}
		for _, t := range st.Topics {
			if t.Name == topic {
				sum += t.MessageCount
				found = true
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("topic %q: %w", topic, driver.ErrTopicNotFound)
	}
	return sum, nil
}

// WrittenResets implements driver.ResettingWrittenCounter: nsqd keeps
// message_count in memory, and one that restarts counts from zero.
func (d *Driver) WrittenResets() bool { return true }

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver.
func (d *Driver) Close() { d.http.CloseIdleConnections() }

// tlsAdvice says what to check when err is a failed TLS handshake with
// nsqd, the server's certificate or the client's; "" for other errors.
// go-nsq keeps only the message of its connections' errors, which is
// read when the error itself is not there.
func tlsAdvice(err error) string {
	if advice := driver.TLSAdvice(err); advice != "" {
		return advice + " (tlsTrustStore, tlsVerifyHostname, tls)"
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "remote error: tls:") && strings.Contains(msg, "certificate"):
		return "nsqd refused the client's certificate or wanted one (its --tls-client-auth-policy): give a key store holding a certificate its --tls-root-ca-file signed (tlsKeyStore)"
	case strings.Contains(msg, "x509:"):
		return "nsqd's certificate was not accepted: give a trust store holding its authority, and connect by a name it holds (tlsTrustStore, tlsVerifyHostname)"
	}
	return ""
}

// clientConfig is go-nsq's configuration for the driver's connections:
// with TLS, each connection asks nsqd for it when it connects (go-nsq's
// IDENTIFY tls_v1), and handshakes counts those that got it.
func (d *Driver) clientConfig(handshakes *atomic.Int64) *gonsq.Config {
	c := gonsq.NewConfig()
	if d.cfg.tls != nil {
		c.TlsV1, c.TlsConfig = true, d.cfg.tls.Clone()
		verify := c.TlsConfig.VerifyConnection
		c.TlsConfig.VerifyConnection = func(cs tls.ConnectionState) error {
			if verify != nil {
				if err := verify(cs); err != nil {
					return err
				}
			}
			handshakes.Add(1)
			return nil
		}
	}
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

// NewProducer implements driver.Driver: a producer of the next nsqd,
// round-robin over the nodes in the order given (the first producer on
// the first), so that the driver's producers spread evenly.
func (d *Driver) NewProducer(ctx context.Context, spec driver.ProducerSpec, ack driver.AckFunc) (driver.Producer, error) {
	node := d.nodes[(d.produced.Add(1)-1)%uint64(len(d.nodes))]
	addr, err := d.tcp(ctx, node)
	if err != nil {
		return nil, err
	}
	var handshakes atomic.Int64
	np, err := gonsq.NewProducer(addr, d.clientConfig(&handshakes))
	if err != nil {
		return nil, err
	}
	np.SetLogger(silent, gonsq.LogLevelError)
	if err := np.Ping(); err != nil {
		np.Stop()
		if advice := tlsAdvice(err); advice != "" {
			return nil, driver.Refused(fmt.Errorf("nsqd at %s: %w: %s", addr, err, advice))
		}
		return nil, fmt.Errorf("nsqd at %s: %w", addr, err)
	}
	if d.cfg.tls != nil && handshakes.Load() == 0 {
		np.Stop()
		return nil, errNoTLS("nsqd at " + addr)
	}
	p := &producer{np: np, topic: spec.Topic, ack: ack, done: make(chan *gonsq.ProducerTransaction, max(1, spec.MaxInFlight)), acked: make(chan struct{})}
	go p.acknowledge()
	return p, nil
}

// errNoTLS is the error of connections that asked nsqd for TLS and were
// answered in plain text, where go-nsq would carry on without it; who
// names the nsqd ("nsqd at 127.0.0.1:4150", "1 of 3 nsqd").
func errNoTLS(who string) error {
	return driver.Refused(fmt.Errorf("%s did not take TLS on the TCP port (go-nsq would have carried on in plain text): start nsqd with --tls-cert and --tls-key, or set tls: false", who))
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

// NewConsumer implements driver.Driver: a consumer of the
// subscription's channel on every nsqd, found through nsqlookupd when
// the driver has one, else connected to each directly. The channel is
// made on every nsqd first. A channel receives the messages published
// after it exists (NSQ cannot replay), and the runner subscribes before
// it produces: StartEarliest and StartNew are the same here.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := checkName("channel", spec.Subscription); err != nil {
		return nil, err
	}
	var addrs []string
	for _, n := range d.nodes {
		addr, err := d.tcp(ctx, n)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
	}
	// go-nsq subscribes without waiting for nsqd's answer: the channel
	// is made here, so that it receives every message published once
	// NewConsumer returns.
	if err := errors.Join(d.callEach(ctx, http.MethodPost, "/channel/create", url.Values{"topic": {spec.Topic}, "channel": {spec.Subscription}})...); err != nil {
		return nil, fmt.Errorf("create channel %q of topic %q: %w", spec.Subscription, spec.Topic, err)
	}
	c := &consumer{consume: consume, maxInFlight: d.cfg.maxInFlight, nodes: len(d.nodes), tls: d.cfg.tls != nil}
	cfg := d.clientConfig(&c.handshakes)
	cfg.MaxInFlight = d.cfg.maxInFlight
	cfg.OutputBufferSize, cfg.OutputBufferTimeout = int64(d.cfg.outputBufferSize), d.cfg.outputBufferTimeout
	nc, err := gonsq.NewConsumer(spec.Topic, spec.Subscription, cfg)
	if err != nil {
		return nil, err
	}
	nc.SetLogger(silent, gonsq.LogLevelError)
	c.nc = nc
	nc.AddHandler(c)
	if d.cfg.lookupd != "" {
		err = nc.ConnectToNSQLookupd(d.cfg.lookupd)
	} else {
		err = nc.ConnectToNSQDs(addrs)
	}
	if err != nil {
		nc.Stop()
		err = fmt.Errorf("subscribe channel %q of topic %q at %s: %w", spec.Subscription, spec.Topic, strings.Join(d.cfg.nsqds, ","), err)
		if advice := tlsAdvice(err); advice != "" {
			return nil, driver.Refused(fmt.Errorf("%w: %s", err, advice))
		}
		return nil, err
	}
	return c, nil
}

// consumer receives a channel's messages on one connection to each
// nsqd, handled by one goroutine of go-nsq's.
type consumer struct {
	nc          *gonsq.Consumer
	consume     driver.ConsumeFunc
	maxInFlight int
	nodes       int // the nsqd nodes it connects to
	// tls says the connections ask for TLS; handshakes counts those
	// that got it.
	tls        bool
	handshakes atomic.Int64
	delivery   driver.Delivery
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

// readyPoll is how often Ready looks at the consumer's connections.
const readyPoll = 10 * time.Millisecond

// Ready implements driver.Consumer: once the consumer is connected to
// every nsqd (through nsqlookupd, those it knows have the topic, which
// takes a poll of it when a registration came late). The channel exists
// on every nsqd once NewConsumer returns, so nothing published is
// missed meanwhile. With TLS, every connection must have got it.
func (c *consumer) Ready(ctx context.Context) error {
	for c.nc.Stats().Connections < c.nodes {
		select {
		case <-ctx.Done():
			return fmt.Errorf("connected to %d of %d nsqd nodes: %w", c.nc.Stats().Connections, c.nodes, ctx.Err())
		case <-time.After(readyPoll):
		}
	}
	if n := c.handshakes.Load(); c.tls && n < int64(c.nodes) {
		return errNoTLS(fmt.Sprintf("%d of %d nsqd", int64(c.nodes)-n, c.nodes))
	}
	return ctx.Err()
}

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
