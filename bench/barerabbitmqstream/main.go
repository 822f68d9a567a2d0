// Command barerabbitmqstream is the ceiling of rabbitmq-stream-go-client
// for the RabbitMQ streams comparison (bench/compare-rabbitmq-stream-tools):
// one producer and one consumer on one stream, each on a connection of its
// own, with nothing measured but the count. The
// producer keeps at most -window messages awaiting their publish confirm
// (brokerbench's in-flight bound for the size) and the client batches
// them as brokerbench's driver has it by default (100 per batch, 100 ms
// at most); the consumer reads from the stream's first offset with the
// driver's default initial credits (10). It prints "records=N rate=R":
// records from the first send to the last delivery.
//
//	barerabbitmqstream -uri rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f -stream s -records 1000000 -size 100 [-cpuprofile FILE]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sync/atomic"
	"time"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	rstream "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

func main() {
	uri := flag.String("uri", "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f", "broker URI")
	stream := flag.String("stream", "barerabbitmqstream", "stream to declare, use and delete")
	records := flag.Int64("records", 1_000_000, "messages to publish and consume")
	size := flag.Int("size", 100, "message size in bytes")
	window := flag.Int("window", 0, "messages awaiting their confirm at most (0: brokerbench's bound for the size)")
	batch := flag.Int("batch", 100, "messages per publish batch")
	credits := flag.Int("credits", 10, "the consumer's initial credits")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if *window == 0 {
		*window = toolcompare.InFlight(*size)
	}
	// The client logs through the standard logger; brokerbench's driver
	// discards it too.
	log.SetOutput(io.Discard)
	stopProfile, err := toolcompare.CPUProfile(*cpuProfile)
	if err == nil {
		err = run(*uri, *stream, *records, *size, *window, *batch, *credits)
		stopProfile()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "barerabbitmqstream:", err)
		os.Exit(1)
	}
}

func run(uri, stream string, records int64, size, window, batch, credits int) error {
	env, err := rstream.NewEnvironment(rstream.NewEnvironmentOptions().SetUri(uri).
		SetMaxProducersPerClient(1).SetMaxConsumersPerClient(1))
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.DeclareStream(stream, rstream.NewStreamOptions()); err != nil && !errors.Is(err, rstream.StreamAlreadyExists) {
		return err
	}
	defer func() { _ = env.DeleteStream(stream) }()

	consumed := make(chan struct{})
	var received int64
	handler := func(_ rstream.ConsumerContext, m *amqp.Message) {
		if received++; received == records {
			close(consumed)
		}
	}
	consumer, err := env.NewConsumer(stream, handler, rstream.NewConsumerOptions().
		SetOffset(rstream.OffsetSpecification{}.First()).SetInitialCredits(int16(credits)))
	if err != nil {
		return err
	}
	defer consumer.Close()

	producer, err := env.NewProducer(stream, rstream.NewProducerOptions().
		SetBatchSize(batch).SetBatchPublishingDelay(100).SetQueueSize(window))
	if err != nil {
		return err
	}
	defer producer.Close()
	// The window is a count the confirm loop lowers a batch at a time,
	// waking a sender that waits for room once per batch rather than
	// once per message.
	var inFlight atomic.Int64
	room := make(chan struct{}, 1)
	confirmed := make(chan error, 1)
	go func() {
		var n int64
		for statuses := range producer.NotifyPublishConfirmation() {
			for _, s := range statuses {
				if !s.IsConfirmed() {
					confirmed <- fmt.Errorf("message %d not confirmed: %v", n, s.GetError())
					return
				}
			}
			n += int64(len(statuses))
			inFlight.Add(-int64(len(statuses)))
			select {
			case room <- struct{}{}:
			default:
			}
			if n == records {
				confirmed <- nil
				return
			}
		}
	}()

	value := make([]byte, size)
	start := time.Now()
	for range records {
		for inFlight.Load() >= int64(window) {
			select {
			case <-room:
			case err := <-confirmed:
				return fmt.Errorf("confirms ended before every message was sent: %w", err)
			}
		}
		inFlight.Add(1)
		if err := producer.Send(amqp.NewMessage(value)); err != nil {
			return err
		}
	}
	if err := <-confirmed; err != nil {
		return err
	}
	select {
	case <-consumed:
	case <-time.After(5 * time.Minute):
		return errors.New("not every message received within 5 minutes")
	}
	fmt.Printf("records=%d rate=%.0f\n", records, float64(records)/time.Since(start).Seconds())
	return nil
}
