// Command baremqtt is the ceiling of paho.golang for the MQTT 5
// comparison (bench/compare-mqtt-tools): one publisher at QoS 1 with a
// bounded number of messages awaiting their PUBACK, and one consumer of a
// shared subscription with brokerbench's consumer settings, on one
// topic, with nothing measured but the count. Each side has its own
// connection. The publisher pipelines as paho's own Publish does for one
// message (the session gives the packet its id and the answer's channel,
// then the packet is written to the connection), and a second goroutine
// waits for the answers in order.
//
// By default both run in one process, the subscription made before the
// first publish, and it prints rate=R, the records from the first publish
// to the last delivery, beside produce=R (first publish to last PUBACK)
// and consume=R. With -consume=false only the publisher runs, and rate is
// the produce rate. (An MQTT subscription receives only what is published
// after it exists, so there is no consumer on its own.)
//
//	baremqtt -addr 127.0.0.1:1883 -topic t -records 1000000 -size 100
//	baremqtt -topic t -consume=false
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session/state"
)

type options struct {
	addr, topic, share string
	records            int64
	size, pending      int
	receiveMaximum     uint
	timeout            time.Duration
	consume            bool
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:1883", "the MQTT server's address")
	flag.StringVar(&o.topic, "topic", "baremqtt", "topic to publish to and subscribe to")
	flag.StringVar(&o.share, "share", "baremqtt", "share name of the subscription ($share/SHARE/TOPIC)")
	flag.Int64Var(&o.records, "records", 1_000_000, "messages to publish and consume")
	flag.IntVar(&o.size, "size", 100, "message size in bytes")
	flag.IntVar(&o.pending, "pending", 16384, "publishes awaiting their PUBACK, at most (brokerbench: 32 MiB / size, at most 16384)")
	flag.UintVar(&o.receiveMaximum, "receive-maximum", 256, "the consumer's receive maximum, as the driver's receiveMaximum")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.BoolVar(&o.consume, "consume", true, "consume -records messages")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "baremqtt:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	start := time.Now()
	var consumed chan struct{}
	if o.consume {
		c, done, err := subscribe(ctx, o)
		if err != nil {
			return err
		}
		defer disconnect(c)
		consumed = done
	}
	if err := produce(ctx, o); err != nil {
		return err
	}
	produced := time.Now()
	rate := func(end time.Time) float64 { return float64(o.records) / end.Sub(start).Seconds() }
	if !o.consume {
		fmt.Printf("records=%d rate=%.0f\n", o.records, rate(produced))
		return nil
	}
	select {
	case <-consumed:
	case <-ctx.Done():
		return fmt.Errorf("not every message consumed within %s", o.timeout)
	}
	end := time.Now()
	fmt.Printf("records=%d rate=%.0f produce=%.0f consume=%.0f\n", o.records, rate(end), rate(produced), rate(end))
	return nil
}

// connect opens a client on a connection of its own, and returns both.
func connect(ctx context.Context, o options, role string, cp *paho.Connect, cc paho.ClientConfig) (*paho.Client, net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", o.addr)
	if err != nil {
		return nil, nil, err
	}
	cc.Conn = conn
	c := paho.NewClient(cc)
	cp.ClientID = "baremqtt-" + role + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := c.Connect(ctx, cp); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return c, conn, nil
}

func disconnect(c *paho.Client) { _ = c.Disconnect(&paho.Disconnect{}) }

// produce publishes o.records messages at QoS 1, at most o.pending
// awaiting their PUBACK, and returns once every one is acknowledged.
func produce(ctx context.Context, o options) error {
	sess := state.NewInMemory()
	defer sess.Close()
	c, conn, err := connect(ctx, o, "pub", &paho.Connect{CleanStart: true}, paho.ClientConfig{Session: sess})
	if err != nil {
		return err
	}
	defer disconnect(c)
	// answers carries each publish's answer channel, in order, to the
	// goroutine that waits for them; its capacity is the window.
	answers := make(chan chan packets.ControlPacket, o.pending)
	acked := make(chan error, 1)
	go func() {
		for ans := range answers {
			resp := <-ans
			if p, ok := resp.Content.(*packets.Puback); !ok || p.ReasonCode >= 0x80 {
				acked <- errors.New("a publish was refused or not acknowledged")
				return
			}
		}
		acked <- nil
	}()
	body := make([]byte, o.size)
	for range o.records {
		pb := &packets.Publish{QoS: 1, Topic: o.topic, Payload: body}
		ans := make(chan packets.ControlPacket, 1)
		if err := sess.AddToSession(ctx, pb, ans); err != nil {
			return err
		}
		if _, err := pb.WriteTo(conn); err != nil {
			return err
		}
		answers <- ans
	}
	close(answers)
	select {
	case err := <-acked:
		return err
	case <-ctx.Done():
		return fmt.Errorf("not every publish acknowledged within %s", o.timeout)
	}
}

// subscribe makes the shared subscription on a connection of its own
// and counts o.records messages; the channel closes at the last.
func subscribe(ctx context.Context, o options) (*paho.Client, chan struct{}, error) {
	done := make(chan struct{})
	var n int64
	rm := uint16(o.receiveMaximum)
	cc := paho.ClientConfig{OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(paho.PublishReceived) (bool, error) {
		// Called by the client's one receiving goroutine; the client
		// acknowledges the message when it returns.
		if n++; n == o.records {
			close(done)
		}
		return true, nil
	}}}
	c, _, err := connect(ctx, o, "sub", &paho.Connect{CleanStart: true, Properties: &paho.ConnectProperties{ReceiveMaximum: &rm}}, cc)
	if err != nil {
		return nil, nil, err
	}
	filter := "$share/" + o.share + "/" + o.topic
	ack, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if err == nil && (len(ack.Reasons) != 1 || ack.Reasons[0] != 1) {
		err = fmt.Errorf("reason codes %v", ack.Reasons)
	}
	if err != nil {
		disconnect(c)
		return nil, nil, fmt.Errorf("subscribe to %s: %w", filter, err)
	}
	return c, done, nil
}
