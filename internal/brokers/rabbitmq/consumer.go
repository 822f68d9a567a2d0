package rabbitmq

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/brokerbench/brokerbench/internal/driver"
)

var consumerTags atomic.Int64

// NewConsumer implements driver.Driver: the subscription's queues,
// declared and bound if new, consumed on a connection of the consumer's
// own. Each consumer's deliveries from one queue are in the queue's order,
// so each (consumer, queue) pair is a lane; consumers of one subscription
// compete for its queues' messages.
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	if err := d.cfg.consumerPace.wait(ctx); err != nil {
		return nil, err
	}
	r, err := d.lookup(ctx, spec.Topic)
	if err != nil {
		return nil, err
	}
	if err := d.subscribe(ctx, spec.Topic, spec.Subscription, r); err != nil {
		return nil, err
	}
	d.mu.Lock()
	index := d.consumers[spec.Topic+"\x00"+spec.Subscription]
	d.consumers[spec.Topic+"\x00"+spec.Subscription]++
	d.mu.Unlock()
	c := &consumer{d: d, consume: consume, laneBase: int32(index * r.partitions), stop: make(chan struct{}), args: amqp.Table{}}
	if d.cfg.queueType == "stream" && index > 0 {
		// A stream queue gives every consumer every message: the
		// subscription's first consumer in this driver reads, the others
		// stand by.
		return c, nil
	}
	for p := range r.partitions {
		c.queues = append(c.queues, partitionQueue(spec.Subscription, p))
	}
	if d.cfg.queueType == "stream" {
		// A stream queue is read from an offset, not drained.
		c.args["x-stream-offset"] = "first"
		if spec.Start == driver.StartNew {
			c.args["x-stream-offset"] = "next"
		}
	}
	conn, deliveries, err := c.connect(ctx, int(d.next.Add(1)-1))
	if err != nil {
		return nil, err
	}
	c.wg.Add(1)
	go c.run(conn, deliveries)
	return c, nil
}

// consumer takes the messages of a subscription's queues.
type consumer struct {
	d        *Driver
	queues   []string
	args     amqp.Table
	laneBase int32
	consume  driver.ConsumeFunc
	mu       sync.Mutex // ConsumeFunc calls are serial
	stop     chan struct{}
	wg       sync.WaitGroup
	closing  sync.Once
	// PauseGate implements driver.Pauser: with no acks, the broker stops
	// at the prefetch limit.
	driver.PauseGate

	connMu sync.Mutex
	conn   *amqp.Connection
	at     int // the index of the connection's URI (run's goroutine)
}

// connect opens a connection to the first URI that answers, from index
// from on, and consumes every queue, each on a channel of its own
// (prefetch applies per queue).
func (c *consumer) connect(ctx context.Context, from int) (*amqp.Connection, []<-chan amqp.Delivery, error) {
	conn, at, err := c.d.dialFrom(ctx, "consumer", from)
	c.at = at
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*amqp.Connection, []<-chan amqp.Delivery, error) {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("RabbitMQ consumer: %w", err)
	}
	var all []<-chan amqp.Delivery
	for _, q := range c.queues {
		// A channel per queue: delivery tags, and so multiple acks, are
		// the channel's.
		ch, err := conn.Channel()
		if err != nil {
			return fail(err)
		}
		if err := ch.Qos(c.d.cfg.prefetch, 0, false); err != nil {
			return fail(err)
		}
		tag := fmt.Sprintf("bb-%d", consumerTags.Add(1))
		deliveries, err := ch.ConsumeWithContext(ctx, q, tag, false, false, false, false, c.args)
		if err != nil {
			return fail(fmt.Errorf("consume %s: %w", q, err))
		}
		all = append(all, deliveries)
	}
	c.connMu.Lock()
	c.conn = conn
	c.connMu.Unlock()
	return conn, all, nil
}

// run takes deliveries until the consumer closes. After losing its
// connection it connects at once to the next URI that answers, and when
// none does, tries again every second.
func (c *consumer) run(conn *amqp.Connection, deliveries []<-chan amqp.Delivery) {
	defer c.wg.Done()
	for {
		var queues sync.WaitGroup
		for i, ds := range deliveries {
			queues.Add(1)
			go func() {
				defer queues.Done()
				c.take(ds, c.laneBase+int32(i))
			}()
		}
		queues.Wait()
		_ = conn.Close()
		for wait := time.Duration(0); ; wait = time.Second {
			select {
			case <-c.stop:
				return
			case <-time.After(wait):
			}
			var err error
			if conn, deliveries, err = c.connect(context.Background(), c.at+1); err == nil {
				break
			}
		}
	}
}

// take hands one queue's deliveries to the runner and acknowledges them,
// multipleAckEvery at once, or all taken so far at a tick of every 10 ms
// when no acknowledgement went out since the tick before: a message
// waits at most 20 ms for its acknowledgement, and a consumer that acks
// by count that often sends no more (each ack is a write to the socket).
// It returns when the deliveries end (the channel closed).
func (c *consumer) take(deliveries <-chan amqp.Delivery, lane int32) {
	every := c.d.cfg.multipleAcks
	flush := time.NewTicker(10 * time.Millisecond)
	defer flush.Stop()
	var (
		ch             amqp.Acknowledger // the channel of the deliveries
		lastTag        uint64            // the last delivery taken
		unacked        int
		ackedSinceTick bool
		d              driver.Delivery
	)
	ack := func() {
		_ = ch.Ack(lastTag, true)
		unacked = 0
	}
	for {
		var m amqp.Delivery
		var ok bool
		// A delivery already waiting is taken without the select over
		// the ticker and stop, which costs more than the receive.
		select {
		case m, ok = <-deliveries:
		default:
			select {
			case m, ok = <-deliveries:
			case <-flush.C:
				if unacked > 0 && !ackedSinceTick {
					ack()
				}
				ackedSinceTick = false
				continue
			case <-c.stop:
				if unacked > 0 {
					ack()
				}
				return
			}
		}
		if !ok {
			return
		}
		c.Wait(c.stop)
		select {
		case <-c.stop:
			// This one unacknowledged (the broker delivers it again); the
			// ones taken before it acknowledged.
			if unacked > 0 {
				ack()
			}
			return
		default:
		}
		c.mu.Lock()
		d.Value, d.Lane = m.Body, lane
		c.consume(&d)
		c.mu.Unlock()
		ch, lastTag, unacked = m.Acknowledger, m.DeliveryTag, unacked+1
		if unacked >= every {
			ack()
			ackedSinceTick = true
		}
	}
}

// Ready implements driver.Consumer: the queues are consumed once
// NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Close implements driver.Consumer: messages taken and not yet
// acknowledged are acknowledged, and the connection closed.
func (c *consumer) Close() {
	c.closing.Do(func() {
		close(c.stop)
		c.Resume()
		c.connMu.Lock()
		conn := c.conn
		c.connMu.Unlock()
		// The queue loops see stop and return; closing the connection
		// afterwards ends their deliveries.
		c.wg.Wait()
		if conn != nil {
			_ = conn.Close()
		}
	})
}
