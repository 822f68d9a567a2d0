// Command bareamqp10 is the ceiling of go-amqp for the Artemis comparison
// (bench/compare-artemis-tools): one sender and one receiver, each on a
// connection of its own, on one queue: durable messages sent unsettled
// with a bounded number awaiting the broker's settlement, a receiver
// with link credit that accepts every message, and nothing measured but
// the count. It prints rate=R: records from the first send to the last
// delivery.
//
//	bareamqp10 -addr 127.0.0.1:61616 -queue q -records 1000000 -size 100 [-cpuprofile FILE]
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
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	sasl := amqp.SASLTypeAnonymous()
	if *user != "" {
		sasl = amqp.SASLTypePlain(*user, *password)
	}
	stopProfile, err := toolcompare.CPUProfile(*cpuProfile)
	if err == nil {
		err = run(*addr, sasl, *queue, *records, *size, *pending, *credit)
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

func run(addr string, sasl amqp.SASLType, queue string, records int64, size, pending, credit int) error {
	ctx := context.Background()
	rconn, rsess, err := dialSession(ctx, addr, sasl)
	if err != nil {
		return err
	}
	defer rconn.Close()
	receiver, err := rsess.NewReceiver(ctx, queue, &amqp.ReceiverOptions{Credit: int32(credit), SettlementMode: amqp.ReceiverSettleModeFirst.Ptr()})
	if err != nil {
		return err
	}
	sconn, ssess, err := dialSession(ctx, addr, sasl)
	if err != nil {
		return err
	}
	defer sconn.Close()
	sender, err := ssess.NewSender(ctx, queue, &amqp.SenderOptions{SettlementMode: amqp.SenderSettleModeUnsettled.Ptr()})
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
	for range records {
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
