// Command barepulsar is the ceiling of pulsar-client-go for the Pulsar
// comparison (bench/compare-pulsar-tools): one producer and one consumer
// in one process, on one topic, with the settings brokerbench's Pulsar
// driver uses by default: batches of at most 1 ms and 1 MiB with no
// count limit, a bounded number of messages awaiting the broker's
// acknowledgement and no send timeout, a Failover subscription from the
// earliest message with a receiver queue of 10000, each message
// acknowledged. Nothing is measured but the count (and, with
// -cpuprofile, where the CPU went). It prints rate=R: records from the
// first send to the last delivery.
//
//	barepulsar -url pulsar://127.0.0.1:6650 -topic persistent://public/default/t -records 1000000 -size 100
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

func main() {
	url := flag.String("url", "pulsar://127.0.0.1:6650", "the broker's service URL")
	topic := flag.String("topic", "persistent://public/default/barepulsar", "topic to use (made on demand by the broker if missing)")
	records := flag.Int64("records", 1_000_000, "messages to send and receive")
	size := flag.Int("size", 100, "message size in bytes")
	pending := flag.Int("pending", 16384, "messages awaiting the broker's acknowledgement at most")
	queue := flag.Int("queue", 10000, "the consumer's receiver queue size")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	stop, err := toolcompare.CPUProfile(*cpuprofile)
	if err == nil {
		err = run(*url, *topic, *records, *size, *pending, *queue)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "barepulsar:", err)
		os.Exit(1)
	}
}

func run(url, topic string, records int64, size, pending, queue int) error {
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, Logger: pulsarlog.DefaultNopLogger()})
	if err != nil {
		return err
	}
	defer cl.Close()
	consumer, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "barepulsar", Type: pulsar.Failover,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: queue})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	defer consumer.Close()
	producer, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: time.Millisecond,
		BatchingMaxSize: 1 << 20, BatchingMaxMessages: math.MaxInt32, MaxPendingMessages: pending, SendTimeout: -1})
	if err != nil {
		return fmt.Errorf("create producer: %w", err)
	}
	defer producer.Close()

	ctx := context.Background()
	consumed := make(chan error, 1)
	go func() {
		for n := int64(0); n < records; n++ {
			msg, err := consumer.Receive(ctx)
			if err == nil {
				err = consumer.Ack(msg)
			}
			if err != nil {
				consumed <- fmt.Errorf("after %d messages: %w", n, err)
				return
			}
		}
		consumed <- nil
	}()
	failed := make(chan error, 1)
	onSent := func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	msg := &pulsar.ProducerMessage{Payload: make([]byte, size)}
	start := time.Now()
	for range records {
		producer.SendAsync(ctx, msg, onSent)
	}
	if err := producer.FlushWithCtx(ctx); err != nil {
		return err
	}
	select {
	case err := <-consumed:
		if err != nil {
			return err
		}
	case err := <-failed:
		return fmt.Errorf("send: %w", err)
	case <-time.After(5 * time.Minute):
		return errors.New("not every message received within 5 minutes")
	}
	fmt.Printf("records=%d rate=%.0f\n", records, float64(records)/time.Since(start).Seconds())
	return nil
}
