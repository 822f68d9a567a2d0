package pulsar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	c := &consumer{pc: pc, consume: consume, ordered: ordered(d.cfg.subscriptionType), stop: make(chan struct{}), done: make(chan struct{}),
		subscribed: time.Now()}
	if d.cfg.subscriptionType == pulsar.Failover {
		c.dispatchDelay = d.activeConsumerDelay
	}
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
	// subscribed is when the subscription took the consumer.
	subscribed time.Time
	// dispatchDelay, if set, returns how long after subscribed the
	// broker starts sending messages.
	dispatchDelay func(context.Context) time.Duration
	gate          driver.PauseGate
	stop          chan struct{} // closed by Close
	done          chan struct{} // closed when receive returns
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
// NewConsumer, and the broker sends it messages once it is ready. A
// Failover subscription's dispatcher reads nothing for
// activeConsumerFailoverDelayTimeMillis (Pulsar's default: 1 s) after
// its active consumer changed, the first one included: a consumer of
// one is ready only then, or a run's first second is measured with no
// message delivered (a max-rate run of 1 s measured 0 msg/s consumed,
// and every message 0.95-1 s after its send).
func (c *consumer) Ready(ctx context.Context) error {
	if c.dispatchDelay == nil {
		return ctx.Err()
	}
	if !pause(ctx, time.Until(c.subscribed.Add(c.dispatchDelay(ctx)))) {
		return ctx.Err()
	}
	return nil
}

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

// defaultFailoverDelay is Pulsar's activeConsumerFailoverDelayTimeMillis.
const defaultFailoverDelay = time.Second

// activeConsumerDelay returns the broker's
// activeConsumerFailoverDelayTimeMillis, read once from its admin API's
// runtime configuration (superuser's: a client that may not read it, or a
// broker that does not say, gets Pulsar's default).
func (d *Driver) activeConsumerDelay(ctx context.Context) time.Duration {
	d.failoverMu.Lock()
	defer d.failoverMu.Unlock()
	if d.failoverRead {
		return d.failoverDelay
	}
	var runtime map[string]string
	err := d.admin.do(ctx, http.MethodGet, "/admin/v2/brokers/configuration/runtime", nil, &runtime)
	if err != nil && ctx.Err() != nil {
		return defaultFailoverDelay // not read: the next call tries again
	}
	d.failoverDelay, d.failoverRead = defaultFailoverDelay, true
	if ms, err := strconv.Atoi(runtime["activeConsumerFailoverDelayTimeMillis"]); err == nil {
		d.failoverDelay = max(time.Duration(ms)*time.Millisecond, 0)
	}
	return d.failoverDelay
}
