package pulsar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Pauser = (*consumer)(nil)

// NewConsumer implements driver.Driver: a consumer of the subscription,
// of the configured type, subscribed when it returns, receiving in its
// own goroutine until Close.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cl, err := d.sharedClient()
	if err != nil {
		return nil, err
	}
	opts := consumerOptions(d.cfg, d.topicName(spec.Topic), spec)
	pc, err := cl.Subscribe(opts)
	for notServedYet(err) && pause(ctx, time.Second) {
		pc, err = cl.Subscribe(opts)
	}
	if err != nil {
		err = fmt.Errorf("pulsar consumer of topic %q, subscription %q: %w", spec.Topic, spec.Subscription, err)
		var pe *pulsar.Error
		if errors.As(err, &pe) && pe.Result() == pulsar.ConsumerBusy && d.cfg.subscriptionType == pulsar.Exclusive {
			err = fmt.Errorf("%w: an Exclusive subscription admits one consumer; for more, set consumerConfig subscriptionType to Failover, Shared or Key_Shared", err)
		}
		return nil, d.clientError(ctx, err)
	}
	c := &consumer{pc: pc, consume: consume, ordered: ordered(d.cfg.subscriptionType), stop: make(chan struct{}), done: make(chan struct{})}
	go c.receive()
	return c, nil
}

// consumerOptions maps the consumer settings onto the client's options
// for a consumer of the topic named full.
func consumerOptions(c *config, full string, spec driver.ConsumerSpec) pulsar.ConsumerOptions {
	pos := pulsar.SubscriptionPositionEarliest
	if spec.Start == driver.StartNew {
		pos = pulsar.SubscriptionPositionLatest
	}
	return pulsar.ConsumerOptions{
		Topic:                       full,
		SubscriptionName:            spec.Subscription,
		Type:                        c.subscriptionType,
		SubscriptionInitialPosition: pos,
		ReceiverQueueSize:           c.receiverQueueSize,
	}
}

// ordered says whether a subscription of type t delivers each
// partition's messages in order to one consumer at a time: Exclusive and
// Failover do; Shared and Key_Shared spread a partition over consumers.
func ordered(t pulsar.SubscriptionType) bool {
	return t == pulsar.Exclusive || t == pulsar.Failover
}

type consumer struct {
	pc      pulsar.Consumer
	consume driver.ConsumeFunc
	ordered bool
	gate    driver.PauseGate
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when receive returns
}

// receive hands every message to consume and then acknowledges it,
// until Close. It takes messages from the client's channel, as Receive
// does, with stop in place of a context: one channel fewer in the
// select of every message than Receive with a cancellable context.
func (c *consumer) receive() {
	defer close(c.done)
	msgs := c.pc.Chan()
	var del driver.Delivery
	for {
		c.gate.Wait(c.stop)
		var cm pulsar.ConsumerMessage
		select {
		case cm = <-msgs:
		case <-c.stop:
			return
		}
		del.Value, del.Lane = cm.Payload(), driver.NoOrder
		if c.ordered {
			del.Lane = lane(cm.ID())
		}
		c.consume(&del)
		_ = c.pc.Ack(cm.Message) // an ack lost with its connection is redelivered
	}
}

// Ready implements driver.Consumer: the consumer subscribed in
// NewConsumer.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Pause implements driver.Pauser: messages stay in the client's receiver
// queue until Resume.
func (c *consumer) Pause() { c.gate.Pause() }

// Resume implements driver.Pauser.
func (c *consumer) Resume() { c.gate.Resume() }

// Close implements driver.Consumer.
func (c *consumer) Close() {
	close(c.stop)
	<-c.done
	c.pc.Close()
}
