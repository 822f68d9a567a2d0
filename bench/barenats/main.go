// Command barenats is the ceiling of nats.go's jetstream API for the NATS
// comparison (bench/compare-nats-tools): one publisher with asynchronous
// publishes and a bounded number awaiting their acknowledgement, and one
// durable pull consumer with brokerbench's consumer settings, on one
// stream of one subject, with nothing measured but the count. Each side has
// its own connection.
//
// With -produce and -consume (the default) both run in one process and it
// prints rate=R, the records from the first publish to the last delivery,
// beside produce=R (first publish to last acknowledgement) and consume=R
// (first publish to last delivery). With -produce only, the stream is kept
// for a later -consume run, and rate is the produce rate; with -consume
// only, rate runs from the consumer's creation to the last delivery.
//
//	barenats -url nats://127.0.0.1:4222 -stream s -records 1000000 -size 100
//	barenats -stream s -produce=false -pull fetch -ack all [-cpuprofile FILE]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

type options struct {
	url, stream, durable, pull, ack string
	records                         int64
	size, pending, batch            int
	maxAckPending                   int
	produce, consume                bool
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", nats.DefaultURL, "server URL")
	flag.StringVar(&o.stream, "stream", "barenats", "stream to create (if missing) and use; its subject is STREAM.0")
	flag.StringVar(&o.durable, "durable", "", "durable consumer name (default: a new one per run)")
	flag.Int64Var(&o.records, "records", 1_000_000, "messages to publish and consume")
	flag.IntVar(&o.size, "size", 100, "message size in bytes")
	flag.IntVar(&o.pending, "pending", 4000, "asynchronous publishes awaiting their acknowledgement, at most")
	flag.IntVar(&o.batch, "batch", 500, "messages per pull request")
	flag.IntVar(&o.maxAckPending, "max-ack-pending", 20000, "unacknowledged messages of the consumer, at most")
	flag.StringVar(&o.pull, "pull", "messages", "how the consumer pulls: messages (the Messages iterator), consume (a Consume callback) or fetch (one Fetch of -batch after another)")
	flag.StringVar(&o.ack, "ack", "explicit", "explicit (every message acknowledged) or all (AckAll: the last of each -batch, and the last record)")
	flag.BoolVar(&o.produce, "produce", true, "publish -records messages")
	flag.BoolVar(&o.consume, "consume", true, "consume -records messages")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	stop, err := toolcompare.CPUProfile(*cpuProfile)
	if err == nil {
		err = run(o)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "barenats:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pubConn, err := nats.Connect(o.url)
	if err != nil {
		return err
	}
	defer pubConn.Close()
	// window holds a token per publish awaiting its acknowledgement.
	window := make(chan struct{}, o.pending)
	var pubErr atomic.Pointer[error]
	pub, err := jetstream.New(pubConn, jetstream.WithPublishAsyncMaxPending(o.pending),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) { <-window }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			pubErr.CompareAndSwap(nil, &err)
			<-window
		}))
	if err != nil {
		return err
	}
	subject := o.stream + ".0"
	if _, err := pub.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: o.stream, Subjects: []string{subject}, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	start := time.Now()
	consumed := make(chan error, 1)
	if o.consume {
		if consumed, err = consume(ctx, o); err != nil {
			return err
		}
	}
	var produced time.Time
	if o.produce {
		body := make([]byte, o.size)
		for range o.records {
			window <- struct{}{}
			if _, err := pub.PublishAsync(subject, body); err != nil {
				return err
			}
		}
		select {
		case <-pub.PublishAsyncComplete():
		case <-ctx.Done():
			return errors.New("not every publish acknowledged within 5 minutes")
		}
		if err := pubErr.Load(); err != nil {
			return *err
		}
		produced = time.Now()
	}
	rate := func(end time.Time) float64 { return float64(o.records) / end.Sub(start).Seconds() }
	switch {
	case !o.consume:
		fmt.Printf("records=%d rate=%.0f\n", o.records, rate(produced))
		return nil
	case !o.produce:
		if err := <-consumed; err != nil {
			return err
		}
		fmt.Printf("records=%d rate=%.0f\n", o.records, rate(time.Now()))
		return nil
	default:
		if err := <-consumed; err != nil {
			return err
		}
		end := time.Now()
		fmt.Printf("records=%d rate=%.0f produce=%.0f consume=%.0f\n", o.records, rate(end), rate(produced), rate(end))
	}
	return pub.DeleteStream(ctx, o.stream)
}

// consume creates the durable pull consumer on its own connection and
// reads o.records messages in the background; the channel says when it
// is done.
func consume(ctx context.Context, o options) (chan error, error) {
	nc, err := nats.Connect(o.url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	durable := o.durable
	if durable == "" {
		durable = "barenats-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	policy := jetstream.AckExplicitPolicy
	if o.ack == "all" {
		policy = jetstream.AckAllPolicy
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, o.stream, jetstream.ConsumerConfig{Durable: durable,
		AckPolicy: policy, DeliverPolicy: jetstream.DeliverAllPolicy, MaxAckPending: o.maxAckPending, AckWait: 30 * time.Second})
	if err != nil {
		nc.Close()
		return nil, err
	}
	done := make(chan error, 1)
	var n int64
	// onMessage counts msg and acknowledges it as -ack says; last is
	// whether it ends a pull batch (fetch only). It reports true after the
	// last record.
	onMessage := func(msg jetstream.Msg, last bool) bool {
		n++
		if o.ack == "explicit" || n%int64(o.batch) == 0 || n == o.records || last {
			_ = msg.Ack()
		}
		return n == o.records
	}
	finish := func(err error) {
		if err == nil && o.produce {
			err = js.DeleteConsumer(ctx, o.stream, durable)
		}
		nc.Close()
		done <- err
	}
	switch o.pull {
	case "messages":
		it, err := cons.Messages(jetstream.PullMaxMessages(o.batch))
		if err != nil {
			nc.Close()
			return nil, err
		}
		go func() {
			for {
				msg, err := it.Next()
				if err != nil {
					it.Stop()
					finish(err)
					return
				}
				if onMessage(msg, false) {
					it.Stop()
					finish(nil)
					return
				}
			}
		}()
	case "consume":
		var cc jetstream.ConsumeContext
		stopped := make(chan struct{})
		cc, err = cons.Consume(func(msg jetstream.Msg) {
			if n < o.records && onMessage(msg, false) {
				close(stopped)
			}
		}, jetstream.PullMaxMessages(o.batch))
		if err != nil {
			nc.Close()
			return nil, err
		}
		go func() {
			<-stopped
			cc.Stop()
			finish(nil)
		}()
	case "fetch":
		go func() {
			for {
				b, err := cons.Fetch(o.batch, jetstream.FetchMaxWait(5*time.Second))
				if err != nil {
					finish(err)
					return
				}
				var prev jetstream.Msg
				for msg := range b.Messages() {
					if prev != nil && onMessage(prev, false) {
						finish(nil)
						return
					}
					prev = msg
				}
				if prev != nil && onMessage(prev, true) {
					finish(nil)
					return
				}
			}
		}()
	default:
		nc.Close()
		return nil, fmt.Errorf("-pull %q: want messages, consume or fetch", o.pull)
	}
	return done, nil
}
