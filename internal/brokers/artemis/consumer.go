package artemis

import (
	"context"
	"fmt"
	"sync"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewConsumer implements driver.Driver: a receiver link, on a connection
// of its own, to the subscription's queue, which its first consumer
// creates. A queue receives the messages routed to the address after it
// exists (Artemis cannot replay), and the runner subscribes before it
// produces: StartEarliest and StartNew are the same here.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := checkName("subscription", spec.Subscription); err != nil {
		return nil, err
	}
	if err := d.createQueue(ctx, spec.Topic, spec.Subscription); err != nil {
		return nil, err
	}
	conn, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("AMQP session: %w", err)
	}
	// The queue's fully qualified name; the "topic" capability has a
	// broker that creates queues on demand make a multicast one.
	source := spec.Topic + "::" + queueName(spec.Topic, spec.Subscription)
	r, err := sess.NewReceiver(ctx, source, &amqp.ReceiverOptions{Credit: int32(d.cfg.credit), SourceCapabilities: []string{"topic"},
		SettlementMode: amqp.ReceiverSettleModeFirst.Ptr()})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open a receiver on %q: %w", source, err)
	}
	c := &consumer{conn: conn, r: r, consume: consume, stop: make(chan struct{}), done: make(chan struct{})}
	go c.receive()
	return c, nil
}

// consumer receives one queue's messages on one receiver link, handled by
// one goroutine.
type consumer struct {
	conn    *amqp.Conn
	r       *amqp.Receiver
	consume driver.ConsumeFunc
	gate    driver.PauseGate
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when receive returns
	closing sync.Once
}

// receive hands every message to the runner and then accepts it, until
// Close.
func (c *consumer) receive() {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.stop
		cancel()
	}()
	var d driver.Delivery
	for {
		c.gate.Wait(c.stop)
		msg, err := c.r.Receive(ctx, nil)
		if err != nil {
			return
		}
		d.Value = msg.GetData()
		c.consume(&d)
		// Not ctx: a message the runner consumed is accepted even while
		// the consumer closes, so that the broker does not deliver it
		// again.
		if err := c.r.AcceptMessage(context.Background(), msg); err != nil {
			return
		}
	}
}

// Ready implements driver.Consumer: the queue exists and the link is
// attached once NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Pause implements driver.Pauser: the consumer takes no more messages;
// those the broker sent on the link's credit wait in it.
func (c *consumer) Pause() { c.gate.Pause() }

// Resume implements driver.Pauser.
func (c *consumer) Resume() { c.gate.Resume() }

// Close implements driver.Consumer: the connection closes, and the broker
// takes back what the consumer had not accepted.
func (c *consumer) Close() {
	c.closing.Do(func() {
		close(c.stop)
		<-c.done
		_ = c.conn.Close()
	})
}
