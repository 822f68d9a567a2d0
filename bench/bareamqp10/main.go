// Command bareamqp10 is the ceiling of go-amqp for the comparisons over
// AMQP 1.0 (bench/compare-artemis-tools, bench/compare-rabbitmq-amqp10-tools):
// one sender and one receiver, each on a connection of its own, on one
// queue: durable messages sent unsettled with a bounded number awaiting
// the broker's settlement, a receiver with link credit that accepts
// every message, and nothing measured but the count. It prints rate=R:
// records from the first send to the last delivery.
//
// By default the sender's target and the receiver's source are both the
// queue's name (Artemis makes an anycast address of that name on
// demand), and go-amqp manages the receiver's credit: it gives back what
// was settled once that reaches the credit left. -target and -source
// name other addresses (RabbitMQ 3's /exchange/X/RK and /amq/queue/Q).
// -credit-when-spent manages the credit by hand instead (ReceiverOptions
// Credit -1 and IssueCredit): the whole credit is granted again only once
// every message it covered was received and accepted. A careful user of
// go-amqp on RabbitMQ 3 does that: its AMQP 1.0 plugin sends more than
// the credit when a grant crosses deliveries on their way
// (rabbitmq-server issue 2597), go-amqp's count of the credit left, an
// unsigned number, then wraps, and the link stalls for good; a grant made
// when the credit is spent crosses nothing. It is what brokerbench's
// rabbitmq-amqp10 driver does on RabbitMQ 3.
//
//	bareamqp10 -addr 127.0.0.1:61616 -queue q -records 1000000 -size 100 [-cpuprofile FILE]
//	bareamqp10 -addr 127.0.0.1:5672 -user guest -password guest -target /exchange/x/0 -source /amq/queue/q -credit-when-spent
//
// -rate R sends at R messages per second, each message at its time
// from the first (sleeping until it), as brokerbench's producer keeps a
// fixed rate: the cost of the same exchange at one rate for both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/Azure/go-amqp"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:61616", "the broker's AMQP acceptor, host:port")
	user := flag.String("user", "", "SASL PLAIN user (none: ANONYMOUS)")
	password := flag.String("password", "", "SASL PLAIN password")
	queue := flag.String("queue", "bareamqp10", "queue (anycast address) to use, made on demand by the broker")
	records := flag.Int64("records", 1_000_000, "messages to send and receive")
	size := flag.Int("size", 100, "message size in bytes")
	pending := flag.Int("pending", 1000, "messages awaiting settlement at most")
	credit := flag.Int("credit", 1000, "the receiver's link credit")
	whenSpent := flag.Bool("credit-when-spent", false, "grant the credit by hand, the whole of it again once every message it covered was received and accepted (instead of go-amqp's top-ups)")
	target := flag.String("target", "", "the sender's target address (default: the queue)")
	source := flag.String("source", "", "the receiver's source address (default: the queue)")
	rate := flag.Float64("rate", 0, "messages per second the sender keeps to, each sent at its time from the first (0: as fast as the broker takes them)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	sasl := amqp.SASLTypeAnonymous()
	if *user != "" {
		sasl = amqp.SASLTypePlain(*user, *password)
	}
	if *rate < 0 {
		fmt.Fprintf(os.Stderr, "bareamqp10: -rate %g: want messages per second, 0 or more (0: as fast as the broker takes them)\n", *rate)
		os.Exit(2)
	}
	if *target == "" {
		*target = *queue
	}
	if *source == "" {
		*source = *queue
	}
	stopProfile, err := toolcompare.CPUProfile(*cpuProfile)
	if err == nil {
		err = run(*addr, sasl, *target, *source, *records, *size, *pending, *credit, *whenSpent, *rate)
		stopProfile()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareamqp10:", err)
		os.Exit(1)
	}
}

// dialSession opens a connection and a session on it.
func dialSession(ctx context.Context, addr string, sasl amqp.SASLType) (*amqp.Conn, *amqp.Session, error) {
	conn, err := amqp.Dial(ctx, "amqp://"+addr, &amqp.ConnOptions{SASLType: sasl})
	if err != nil {
		return nil, nil, err
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, sess, nil
}

func run(addr string, sasl amqp.SASLType, target, source string, records int64, size, pending, credit int, whenSpent bool, rate float64) error {
	ctx := context.Background()
	rconn, rsess, err := dialSession(ctx, addr, sasl)
	if err != nil {
		return err
	}
	defer rconn.Close()
	ro := &amqp.ReceiverOptions{Credit: int32(credit), SettlementMode: amqp.ReceiverSettleModeFirst.Ptr()}
	if whenSpent {
		ro.Credit = -1
	}
	receiver, err := rsess.NewReceiver(ctx, source, ro)
	if err == nil && whenSpent {
		err = receiver.IssueCredit(uint32(credit))
	}
	if err != nil {
		return err
	}
	sconn, ssess, err := dialSession(ctx, addr, sasl)
	if err != nil {
		return err
	}
	defer sconn.Close()
	sender, err := ssess.NewSender(ctx, target, &amqp.SenderOptions{SettlementMode: amqp.SenderSettleModeUnsettled.Ptr()})
	if err != nil {
		return err
	}
	consumed := make(chan error, 1)
	go func() {
		for n := int64(0); n < records; n++ {
			msg, err := receiver.Receive(ctx, nil)
			if err == nil {
				err = receiver.AcceptMessage(ctx, msg)
			}
			if err == nil && whenSpent && (n+1)%int64(credit) == 0 {
				err = receiver.IssueCredit(uint32(credit))
			}
			if err != nil {
				consumed <- fmt.Errorf("after %d messages: %w", n, err)
				return
			}
		}
		consumed <- nil
	}()
	receipts := make(chan amqp.SendReceipt, pending)
	settled := make(chan error, 1)
	go func() {
		for range records {
			r := <-receipts
			state, err := r.Wait(ctx)
			if _, ok := state.(*amqp.StateAccepted); err == nil && !ok {
				err = fmt.Errorf("settled as %T", state)
			}
			if err != nil {
				settled <- err
				return
			}
		}
		settled <- nil
	}()
	msg := &amqp.Message{Header: &amqp.MessageHeader{Durable: true}, Data: [][]byte{make([]byte, size)}}
	start := time.Now()
	for i := range records {
		if rate > 0 {
			if wait := time.Until(start.Add(time.Duration(float64(i) * float64(time.Second) / rate))); wait > 0 {
				time.Sleep(wait)
			}
		}
		r, err := sender.SendWithReceipt(ctx, msg, nil)
		if err != nil {
			return err
		}
		receipts <- r
	}
	if err := <-settled; err != nil {
		return err
	}
	select {
	case err := <-consumed:
		if err != nil {
			return err
		}
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("not every message received within 5 minutes")
	}
	fmt.Printf("records=%d rate=%.0f\n", records, float64(records)/time.Since(start).Seconds())
	return nil
}
