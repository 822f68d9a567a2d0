// Command bareamqp is the ceiling of amqp091-go for the RabbitMQ
// comparison (bench/compare-rabbitmq-tools): one publisher with publisher
// confirms and a bounded number outstanding, and one consumer with a
// prefetch limit and multiple acks, on a quorum queue, with nothing
// measured but the count. It prints rate=R: records from the first
// publish to the last delivery.
//
//	bareamqp -uri amqp://guest:guest@127.0.0.1:5672/ -queue q -records 1000000 -size 100 [-cpuprofile FILE]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

func main() {
	uri := flag.String("uri", "amqp://guest:guest@127.0.0.1:5672/", "broker URI")
	queue := flag.String("queue", "bareamqp", "quorum queue to declare and use")
	records := flag.Int64("records", 1_000_000, "messages to publish and consume")
	size := flag.Int("size", 100, "message size in bytes")
	confirms := flag.Int("confirms", 1000, "unconfirmed messages at most")
	prefetch := flag.Int("prefetch", 1000, "consumer prefetch")
	ackEvery := flag.Int("ack-every", 50, "acknowledge this many deliveries at once")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	stopProfile, err := toolcompare.CPUProfile(*cpuProfile)
	if err == nil {
		err = run(*uri, *queue, *records, *size, *confirms, *prefetch, *ackEvery)
		stopProfile()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareamqp:", err)
		os.Exit(1)
	}
}

func run(uri, queue string, records int64, size, confirms, prefetch, ackEvery int) error {
	pubConn, err := amqp.Dial(uri)
	if err != nil {
		return err
	}
	defer pubConn.Close()
	conConn, err := amqp.Dial(uri)
	if err != nil {
		return err
	}
	defer conConn.Close()
	pub, err := pubConn.Channel()
	if err != nil {
		return err
	}
	if _, err := pub.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		return err
	}
	con, err := conConn.Channel()
	if err != nil {
		return err
	}
	if err := con.Qos(prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := con.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	consumed := make(chan time.Time, 1)
	go func() {
		var n int64
		for d := range deliveries {
			n++
			if n%int64(ackEvery) == 0 || n == records {
				_ = d.Ack(true)
			}
			if n == records {
				consumed <- time.Now()
				return
			}
		}
	}()
	if err := pub.Confirm(false); err != nil {
		return err
	}
	acks := pub.NotifyPublish(make(chan amqp.Confirmation, confirms+1))
	window := make(chan struct{}, confirms)
	confirmed := make(chan error, 1)
	go func() {
		var n int64
		for c := range acks {
			if !c.Ack {
				confirmed <- fmt.Errorf("message %d nacked", c.DeliveryTag)
				return
			}
			<-window
			if n++; n == records {
				confirmed <- nil
				return
			}
		}
		confirmed <- fmt.Errorf("channel closed after %d confirms", n)
	}()
	body := make([]byte, size)
	start := time.Now()
	for range records {
		window <- struct{}{}
		if err := pub.Publish("", queue, false, false, amqp.Publishing{Body: body, DeliveryMode: amqp.Persistent}); err != nil {
			return err
		}
	}
	if err := <-confirmed; err != nil {
		return err
	}
	select {
	case end := <-consumed:
		fmt.Printf("records=%d rate=%.0f\n", records, float64(records)/end.Sub(start).Seconds())
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("not every message consumed within 5 minutes")
	}
	_, err = pub.QueueDelete(queue, false, false, false)
	return err
}
