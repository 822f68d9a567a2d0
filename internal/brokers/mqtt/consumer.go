package mqtt

import (
	"context"
	"fmt"
	"sync"

	"github.com/eclipse/paho.golang/paho"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewConsumer implements driver.Driver: a connection holding the shared
// subscription $share/SUBSCRIPTION/TOPIC, at the publishing QoS. It
// receives what is published once NewConsumer returns: MQTT keeps no
// log to start from (StartEarliest and StartNew are the same).
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := checkName("subscription", spec.Subscription, false); err != nil {
		return nil, err
	}
	if err := d.exists(ctx, spec.Topic); err != nil {
		return nil, err
	}
	c := &consumer{consume: consume, stop: make(chan struct{})}
	cp := &paho.Connect{CleanStart: d.cfg.cleanSession, Properties: &paho.ConnectProperties{ReceiveMaximum: &d.cfg.receiveMaximum}}
	if !d.cfg.cleanSession {
		cp.Properties.SessionExpiryInterval = &d.cfg.sessionExpiry
	}
	s, err := d.connect(ctx, "sub", cp, c.receive, paho.ClientConfig{})
	if err != nil {
		return nil, err
	}
	c.s = s
	filter := "$share/" + spec.Subscription + "/" + d.topic(spec.Topic)
	ack, err := s.cli.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: d.cfg.qos}}})
	switch {
	case err != nil:
	case len(ack.Reasons) != 1 || ack.Reasons[0] >= 0x80:
		err = fmt.Errorf("refused: reason codes %v", ack.Reasons)
	case ack.Reasons[0] < d.cfg.qos:
		// The server would deliver below the QoS the run measures.
		err = fmt.Errorf("the server grants QoS %d, below the publishing QoS %d: lower qos", ack.Reasons[0], d.cfg.qos)
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("subscribe to %s: %w", filter, err)
	}
	return c, nil
}

// consumer hands every message its connection receives to the runner;
// the client acknowledges it (PUBACK, PUBREC) once receive returns.
type consumer struct {
	s       *session
	consume driver.ConsumeFunc
	// PauseGate implements driver.Pauser: receive waits until Resume,
	// and the server holds what it would send beyond receiveMaximum.
	driver.PauseGate
	stop     chan struct{}
	mu       sync.Mutex // held by receive while it calls consume
	closed   bool
	delivery driver.Delivery // receive's, reused
	closing  sync.Once
}

// receive is the client's handler of received messages, called by its
// one receiving goroutine.
func (c *consumer) receive(pr paho.PublishReceived) (bool, error) {
	c.Wait(c.stop)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		// One lane: the server sends each publisher's messages of a
		// topic in the order it received them.
		c.delivery.Value, c.delivery.Lane = pr.Packet.Payload, 0
		c.consume(&c.delivery)
	}
	return true, nil
}

// Ready implements driver.Consumer: the subscription exists once
// NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Close implements driver.Consumer: no consume call happens after it
// returns.
func (c *consumer) Close() {
	c.closing.Do(func() {
		close(c.stop)
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.s.close()
	})
}
