// Package mqtt is brokerbench's MQTT 5: its driver, on paho.golang; the
// local Eclipse Mosquitto server brokerbench starts (Kind); the reading
// of a server's $SYS topics (ParseSys); and the module that registers
// them (module.go).
//
// An MQTT topic has no partitions and no log: a subscription receives
// what is published after it subscribed. A brokerbench topic is the MQTT
// topic of its name (under topicPrefix) and a retained message on
// brokerbench/topics/NAME that records it, so that topics can be listed
// as created and deleted. A producer publishes at its QoS over one
// connection and is acknowledged when the QoS says (0: written to the
// socket, 1: PUBACK, 2: PUBCOMP). A subscription is a shared
// subscription, $share/SUBSCRIPTION/TOPIC: the broker hands each message
// to one of its consumers.
package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Driver reaches one MQTT 5 server; every producer and consumer has a
// connection of its own, and each administrative call opens one.
type Driver struct {
	cfg  *config
	opts driver.Options
}

var _ driver.Pauser = (*consumer)(nil)

// New validates dc; connections are made on first use.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	cfg, err := parseConfig(dc, opts.Endpoints, opts.Credentials)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, opts: opts}, nil
}

// metaPrefix is where a topic's record is retained.
const metaPrefix = "brokerbench/topics/"

// topic returns the MQTT topic of a brokerbench topic.
func (d *Driver) topic(name string) string {
	if d.cfg.topicPrefix == "" {
		return name
	}
	return d.cfg.topicPrefix + "/" + name
}

// checkName refuses what an MQTT topic name or share name cannot hold.
func checkName(what, name string, slash bool) error {
	bad := "+#"
	if !slash {
		bad += "/"
	}
	if name == "" || strings.ContainsAny(name, bad) || strings.HasPrefix(name, "$") {
		return fmt.Errorf("%s %q: MQTT names hold no %s and do not begin with $", what, name, strings.Join(strings.Split(bad, ""), ", "))
	}
	return nil
}

// session is one connection to the server.
type session struct {
	cli  *paho.Client
	conn net.Conn
	// maxPacket is the largest packet the server accepts, as its CONNACK
	// says (0: MQTT's own limit).
	maxPacket uint32
	// disconnected is the server's DISCONNECT, once it sent one, and
	// disconnect closes then.
	disconnected atomic.Pointer[paho.Disconnect]
	disconnect   chan struct{}
}

// disconnectGrace is how long an operation whose client stopped waits for
// the server's DISCONNECT to be handed over: paho stops the client first
// and calls OnServerDisconnect just after.
const disconnectGrace = 100 * time.Millisecond

// during returns ctx, ended also when the session's client stops (the
// server disconnected it, or its connection failed), for an operation
// that waits for the server's answer: paho leaves such an operation
// waiting until its context ends. The operation's error is then
// s.failed's.
func (s *session) during(ctx context.Context) (context.Context, context.CancelFunc) {
	op, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-s.cli.Done():
			select {
			case <-s.disconnect:
			case <-time.After(disconnectGrace):
			}
			cancel(s.lostError())
		case <-op.Done():
		}
	}()
	return op, func() { cancel(nil) }
}

// lostError says why the session's client stopped.
func (s *session) lostError() error {
	dp := s.disconnected.Load()
	if dp == nil {
		return errors.New("the connection to the MQTT server was lost")
	}
	reason := ""
	if dp.Properties != nil && dp.Properties.ReasonString != "" {
		reason = ": " + dp.Properties.ReasonString
	}
	return fmt.Errorf("the MQTT server disconnected the client (reason %#x%s)", dp.ReasonCode, reason)
}

// failed returns err, or why the session ended if that ended op (see
// during).
func (s *session) failed(op context.Context, err error) error {
	if cause := context.Cause(op); op.Err() != nil && cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return err
}

// connect opens a connection with a client id beginning with role;
// received, if set, is given every message the server sends it.
func (d *Driver) connect(ctx context.Context, role string, cp *paho.Connect, received func(paho.PublishReceived) (bool, error), cc paho.ClientConfig) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dial := d.opts.Dial
	if d.cfg.tls != nil {
		dial = driver.DialTLS(d.opts.Dial, d.cfg.tls)
	}
	conn, err := dial(ctx, "tcp", d.cfg.addr)
	if err != nil {
		return nil, refused(fmt.Errorf("MQTT server at %s: %w", d.cfg.addr, err))
	}
	if d.cfg.tls != nil {
		conn = newPacketConn(conn)
	}
	cc.Conn = conn
	if received != nil {
		cc.OnPublishReceived = []func(paho.PublishReceived) (bool, error){received}
	}
	s := &session{conn: conn, disconnect: make(chan struct{})}
	if cc.OnServerDisconnect == nil {
		cc.OnServerDisconnect = func(dp *paho.Disconnect) {
			if s.disconnected.CompareAndSwap(nil, dp) {
				close(s.disconnect)
			}
		}
	}
	cli := paho.NewClient(cc)
	if cp == nil {
		cp = &paho.Connect{CleanStart: true}
	}
	cp.ClientID = "bb-" + role + "-" + randomID()
	if d.cfg.username != "" {
		cp.Username, cp.UsernameFlag = d.cfg.username, true
	}
	if d.cfg.password != "" {
		cp.Password, cp.PasswordFlag = []byte(d.cfg.password), true
	}
	ack, err := cli.Connect(ctx, cp)
	if err != nil {
		_ = conn.Close()
		if ack != nil && (ack.ReasonCode == 0x86 || ack.ReasonCode == 0x87) {
			return nil, driver.Refused(fmt.Errorf("MQTT server at %s: %w: check the username and password", d.cfg.addr, err))
		}
		return nil, refused(fmt.Errorf("MQTT server at %s: %w", d.cfg.addr, err))
	}
	s.cli = cli
	if ack.Properties != nil && ack.Properties.MaximumPacketSize != nil {
		s.maxPacket = *ack.Properties.MaximumPacketSize
	}
	return s, nil
}

// close disconnects the session.
func (s *session) close() {
	_ = s.cli.Disconnect(&paho.Disconnect{})
	_ = s.conn.Close()
}

// refused marks err as driver.ErrRefused, with advice, when the TLS
// handshake failed.
func refused(err error) error {
	if advice := driver.TLSAdvice(err); advice != "" {
		return driver.Refused(fmt.Errorf("%w: %s (tlsTrustStore, tlsVerifyHostname, tls)", err, advice))
	}
	return err
}

// randomID returns 8 random hex digits, for client ids.
func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// retained returns the retained messages of the topics filter matches,
// by topic. The server sends them after its SUBACK, before it handles
// the connection's next packet: a message the connection then publishes
// to a topic of its own comes back after all of them.
func (d *Driver) retained(ctx context.Context, filter string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	marker := "brokerbench/marker/" + randomID()
	got := make(chan struct{})
	out, done := map[string][]byte{}, false // written by the client's one receiving goroutine until got closes
	s, err := d.connect(ctx, "admin", nil, func(pr paho.PublishReceived) (bool, error) {
		switch {
		case done:
		case pr.Packet.Topic == marker:
			done = true
			close(got)
		case len(pr.Packet.Payload) > 0:
			out[pr.Packet.Topic] = pr.Packet.Payload
		}
		return true, nil
	}, paho.ClientConfig{})
	if err != nil {
		return nil, err
	}
	defer s.close()
	op, end := s.during(ctx)
	defer end()
	sub := &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 0}, {Topic: marker, QoS: 0}}}
	if _, err := s.cli.Subscribe(op, sub); err != nil {
		return nil, fmt.Errorf("subscribe to %s: %w", filter, s.failed(op, err))
	}
	if _, err := s.cli.Publish(op, &paho.Publish{Topic: marker, QoS: 0, Payload: []byte("-")}); err != nil {
		return nil, fmt.Errorf("publish to %s: %w", marker, s.failed(op, err))
	}
	select {
	case <-got:
		return out, nil
	case <-op.Done():
		return nil, fmt.Errorf("read the retained messages of %s: %w", filter, s.failed(op, op.Err()))
	}
}

// publishRetained sets (or, with an empty payload, clears) the retained
// message of topic, once the server acknowledged it.
func (d *Driver) publishRetained(ctx context.Context, topic string, payload []byte) error {
	s, err := d.connect(ctx, "admin", nil, nil, paho.ClientConfig{})
	if err != nil {
		return err
	}
	defer s.close()
	op, end := s.during(ctx)
	defer end()
	if _, err := s.cli.Publish(op, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: payload}); err != nil {
		return s.failed(op, err)
	}
	return nil
}

// BrokerVersion implements driver.Driver: the version the server
// retains on $SYS/broker/version (Mosquitto does).
func (d *Driver) BrokerVersion(ctx context.Context) (string, error) {
	got, err := d.retained(ctx, "$SYS/broker/version")
	if err != nil {
		return "", err
	}
	if v, ok := got["$SYS/broker/version"]; ok {
		return string(v), nil
	}
	return "MQTT 5 server (version not published on $SYS/broker/version)", nil
}

// CreateTopic implements driver.Driver: MQTT topics exist once
// published to, so creating one records it (a retained message).
func (d *Driver) CreateTopic(ctx context.Context, spec driver.TopicSpec) error {
	if err := checkName("topic", spec.Name, true); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if spec.Partitions > 1 || spec.ReplicationFactor > 1 {
		return fmt.Errorf("create topic %q: MQTT topics have no partitions and no replicas", spec.Name)
	}
	if err := d.publishRetained(ctx, metaPrefix+d.topic(spec.Name), []byte("1")); err != nil {
		return fmt.Errorf("create topic %q: %w", spec.Name, err)
	}
	return nil
}

// DeleteTopic implements driver.Driver: it clears the topic's record.
// What the server queued for subscriptions of the topic stays with their
// sessions.
func (d *Driver) DeleteTopic(ctx context.Context, name string) error {
	if err := d.exists(ctx, name); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := d.publishRetained(ctx, metaPrefix+d.topic(name), nil); err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	return nil
}

// exists returns an error wrapping driver.ErrTopicNotFound when the
// topic has no record.
func (d *Driver) exists(ctx context.Context, name string) error {
	meta := metaPrefix + d.topic(name)
	got, err := d.retained(ctx, meta)
	if err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	if _, ok := got[meta]; !ok {
		return fmt.Errorf("topic %q: %w", name, driver.ErrTopicNotFound)
	}
	return nil
}

// EffectiveConfig implements driver.Driver.
func (d *Driver) EffectiveConfig() map[string]workload.Properties { return d.cfg.effective }

// Close implements driver.Driver: the driver holds no connection.
func (d *Driver) Close() {}

// errClosed fails messages sent after Close began.
var errClosed = errors.New("producer closed")
