package stream

import (
	"context"
	"fmt"
	"sync"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	rstream "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewConsumer implements driver.Driver: the subscription's first consumer
// in this driver reads every partition (stream) of the topic, each a lane;
// later ones stand by (see the package comment).
func (d *Driver) NewConsumer(ctx context.Context, spec driver.ConsumerSpec, consume driver.ConsumeFunc) (driver.Consumer, error) {
	names, err := d.partitions(spec.Topic)
	if err != nil {
		return nil, err
	}
	key := spec.Topic + "\x00" + spec.Subscription
	d.mu.Lock()
	reading := d.subs[key]
	d.subs[key] = true
	d.mu.Unlock()
	c := &consumer{consume: consume, stop: make(chan struct{})}
	if reading {
		return c, nil
	}
	env, err := d.environment()
	if err != nil {
		return nil, err
	}
	offset := rstream.OffsetSpecification{}.First()
	if spec.Start == driver.StartNew {
		offset = rstream.OffsetSpecification{}.Next()
	}
	for lane, name := range names {
		handler := func(_ rstream.ConsumerContext, m *amqp.Message) { c.deliver(m, int32(lane)) }
		opts := rstream.NewConsumerOptions().SetOffset(offset).SetCRCCheck(d.cfg.crcCheck).
			SetInitialCredits(int16(min(d.cfg.initialCredits, 1000))).SetClientProvidedName("brokerbench consumer")
		sc, err := env.NewConsumer(name, handler, opts)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("consumer of stream %q: %w", name, err)
		}
		c.streams = append(c.streams, sc)
	}
	return c, nil
}

// consumer reads a subscription's streams, or stands by.
type consumer struct {
	streams []*rstream.Consumer
	consume driver.ConsumeFunc
	// PauseGate implements driver.Pauser: a paused handler holds the
	// client's delivery, and the broker stops at the credits granted.
	driver.PauseGate
	stop    chan struct{} // closed by Close
	mu      sync.Mutex    // ConsumeFunc calls are serial; none after Close
	closed  bool
	closing sync.Once
}

var _ driver.Pauser = (*consumer)(nil)

func (c *consumer) deliver(m *amqp.Message, lane int32) {
	c.Wait(c.stop)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	d := driver.Delivery{Value: m.GetData(), Lane: lane}
	c.consume(&d)
}

// Ready implements driver.Consumer: the streams are subscribed once
// NewConsumer returns.
func (c *consumer) Ready(ctx context.Context) error { return ctx.Err() }

// Close implements driver.Consumer.
func (c *consumer) Close() {
	c.closing.Do(func() {
		close(c.stop) // a paused delivery returns, unconsumed
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.Resume()
		for _, sc := range c.streams {
			_ = sc.Close()
		}
	})
}
