package rocketmq

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var _ driver.Pauser = (*consumer)(nil)

// awaitDuration is how long a receive call waits for messages on an
// empty queue (the proxy's shortest long polling).
const awaitDuration = 5 * time.Second

// groupName is the consumer group of a subscription of topic: OMB's
// name, so that groups of different topics never share a subscription.
func groupName(topic, subscription string) string {
	return topic + "_" + subscription
}

// NewConsumer implements driver.Driver: a simple consumer of the
// subscription's group, receiving when it returns in maxInFlightReceives
// receive loops, until Close; the loops take turns calling consume. A
// new group's offsets are committed first, at each queue's oldest
// message (StartEarliest) or its newest (StartNew).
// Deliveries promise no order (NoOrder): a producer's sends are
// concurrent calls, stored in the order they arrive.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	group := groupName(spec.Topic, spec.Subscription)
	if !validName(spec.Subscription) || len(group) > 255 {
		return nil, fmt.Errorf("rocketmq consumer group %q: group names hold up to 255 letters, digits, '%%', '|', '-' and '_'", group)
	}
	err := d.startGroup(ctx, spec.Topic, group, spec.Start)
	if err != nil {
		return nil, fmt.Errorf("rocketmq consumer group %q of topic %q: %w", group, spec.Topic, err)
	}
	sc, err := rmq.NewSimpleConsumer(d.clientConfig(group), rmq.WithAwaitDuration(awaitDuration),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{spec.Topic: rmq.SUB_ALL}), rmq.WithClientFuncForSimpleConsumer(d.newClient))
	if err == nil {
		err = sc.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("rocketmq consumer of topic %q, group %q at %s: %w", spec.Topic, group, d.cfg.grpcEndpoint, err)
	}
	return startConsumer(sc, consume, d.cfg.receives, int32(d.cfg.receiveBatch), d.cfg.invisible), nil
}

// startConsumer starts loops receive loops of the started simple
// consumer sc.
func startConsumer(sc rmq.SimpleConsumer, consume driver.ConsumeFunc, loops int, batch int32, invisible time.Duration) *consumer {
	c := &consumer{sc: sc, consume: consume, batch: batch, invisible: invisible, stop: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for range loops {
		c.wg.Add(1)
		go c.receive()
	}
	return c
}

// startGroup creates the group on every broker of the topic and, where
// it has no offset yet, commits one where start says.
func (d *Driver) startGroup(ctx context.Context, topic, group string, start driver.StartPosition) error {
	r, err := d.admin.route(ctx, topic)
	if err != nil {
		return err
	}
	for _, addr := range r.masters() {
		if err := d.admin.createGroup(ctx, addr, group); err != nil {
			return err
		}
	}
	d.mu.Lock()
	if !slices.Contains(d.groups[topic], group) {
		d.groups[topic] = append(d.groups[topic], group)
	}
	d.mu.Unlock()
	for _, q := range r.queues() {
		_, found, err := d.admin.groupOffset(ctx, group, topic, q)
		if err != nil {
			return err
		}
		if found {
			continue
		}
		off, err := d.admin.offset(ctx, topic, q, start == driver.StartEarliest)
		if err == nil {
			err = d.admin.setGroupOffset(ctx, group, topic, q, off)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type consumer struct {
	sc      rmq.SimpleConsumer
	consume driver.ConsumeFunc
	// consumeMu serialises the receive loops' calls of consume.
	consumeMu sync.Mutex
	batch     int32
	invisible time.Duration
	gate      driver.PauseGate
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	stop      chan struct{} // closed by Close
	wg        sync.WaitGroup
}

// receive hands every message it receives to consume, then sends the
// batch's acknowledgements and receives again while they are in calls,
// until Close. A loop has at most one batch's acknowledgements in calls:
// before it sends the next batch's it waits for them. Each receive call
// waits for the proxy's answer, and each acknowledgement is a call of its
// own: with the acknowledgements on the receive path, a loop received
// one batch per two round trips (docs/drivers/rocketmq.md).
func (c *consumer) receive() {
	defer c.wg.Done()
	var del driver.Delivery
	// acked is closed when the previous batch is acknowledged.
	acked := make(chan struct{})
	close(acked)
	defer func() { <-acked }()
	for {
		c.gate.Wait(c.stop)
		if c.ctx.Err() != nil {
			return
		}
		msgs, err := c.sc.Receive(c.ctx, c.batch, c.invisible)
		if c.ctx.Err() != nil {
			// A batch received as Close came is dropped unacknowledged:
			// the group delivers it again once invisible no more.
			return
		}
		if err != nil {
			// No message within the long poll, or a proxy that is
			// reconnecting: try again shortly.
			select {
			case <-c.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		c.consumeMu.Lock()
		for _, mv := range msgs {
			del.Value, del.Lane = mv.GetBody(), driver.NoOrder
			c.consume(&del)
		}
		c.consumeMu.Unlock()
		<-acked
		acked = make(chan struct{})
		go func(done chan struct{}) {
			defer close(done)
			c.ack(msgs)
		}(acked)
	}
}

// ack acknowledges a batch, one call per message, at once, and returns
// when every call is answered; a message whose acknowledgement is lost
// is delivered again once invisible no more.
func (c *consumer) ack(msgs []*rmq.MessageView) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, mv := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.sc.Ack(ctx, mv)
		}()
	}
	wg.Wait()
}

// Ready implements driver.Consumer: the consumer's group has its offsets
// and its client its route when NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Pause implements driver.Pauser: the receive loops stop before their
// next receive call until Resume.
func (c *consumer) Pause() { c.gate.Pause() }

// Resume implements driver.Pauser.
func (c *consumer) Resume() { c.gate.Resume() }

// Close implements driver.Consumer: it returns once every
// acknowledgement sent was answered (or timed out).
func (c *consumer) Close() {
	close(c.stop)
	c.cancel()
	c.wg.Wait()
	_ = c.sc.GracefulStop()
}
