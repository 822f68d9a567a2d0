package amqp10

import (
	"context"
	"fmt"
	"sync"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/internal/driver"
)

// NewConsumer returns a consumer receiving from link on a connection of
// its own, to the first of nodes that answers from the one at index
// from (see ConnectFrom), granting the link credit as credit says. Each
// message is accepted after consume returned (at least once). The link's source keeps each producer's
// messages in order for the consumer: every delivery is lane 0.
func NewConsumer(ctx context.Context, nodes []*Broker, from uint64, link Link, credit Credit, consume driver.ConsumeFunc) (driver.Consumer, error) {
	conn, _, err := ConnectFrom(ctx, nodes, from)
	if err != nil {
		return nil, err
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("AMQP session: %w", err)
	}
	// Credit is managed here (-1, see grants), not by go-amqp: go-amqp
	// tops it up when the messages settled reach the credit left, which
	// never happens again once a broker sent more than it was granted
	// (RabbitMQ 3's AMQP 1.0 plugin does, see Credit) and the credit
	// left, an unsigned count, wrapped around; the link then stalls.
	r, err := sess.NewReceiver(ctx, link.Address, &amqp.ReceiverOptions{Credit: -1, SourceCapabilities: link.Capabilities,
		SettlementMode: amqp.ReceiverSettleModeFirst.Ptr()})
	g := newGrants(credit)
	if err == nil {
		err = r.IssueCredit(uint32(g.granted))
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open a receiver on %q: %w", link.Address, err)
	}
	c := &consumer{conn: conn, r: r, consume: consume, grants: g, stop: make(chan struct{}), done: make(chan struct{})}
	go c.receive()
	return c, nil
}

var _ driver.Pauser = (*consumer)(nil)

// consumer receives on one receiver link, handled by one goroutine.
type consumer struct {
	conn    *amqp.Conn
	r       *amqp.Receiver
	consume driver.ConsumeFunc
	grants  *grants // used by receive alone
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
		if credit := c.grants.accept(); credit > 0 {
			if err := c.r.IssueCredit(credit); err != nil {
				return
			}
		}
	}
}

// Ready implements driver.Consumer: the link is attached once
// NewConsumer returns.
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
