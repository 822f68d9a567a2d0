// Command barerocketmq is the ceiling of rocketmq-clients' Go client for
// the RocketMQ comparison (bench/compare-rocketmq-tools): one producer
// sending asynchronously through a RocketMQ 5 proxy with a bounded number
// of sends in calls to the proxy, and one simple consumer receiving
// batches and acknowledging each message, with nothing measured but the
// count. The client is configured as brokerbench's RocketMQ driver
// configures it: plaintext gRPC, no per-call log, the client's own log at
// level error, 3 attempts per send, 32 receive loops of batches of 32
// messages kept invisible 30 s, each batch's acknowledgements sent at
// once while the loop receives again (at most one batch's unanswered
// per loop).
//
// The topic must exist (the broker creates none on first use). By default
// both sides run in one process, the consumer started before the first
// send, and it prints rate=R, the records from the first send to the
// last delivery, beside produce=R (first send to last acknowledgement)
// and consume=R. With -consume=false only the producer runs, and rate is
// the produce rate. The consumer group is new for a new topic (the
// topic's name and "_barerocketmq"): on a topic that no one has read, it
// starts at each queue's first message.
//
//	barerocketmq -endpoint 127.0.0.1:8081 -topic t -records 100000 -size 100
//	barerocketmq -topic t -consume=false [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

// The driver's settings that take no flag: attempts per send, the
// proxy's shortest long polling, and the pause before a receive loop
// tries again after an empty or failed call.
const (
	maxAttempts    = 3
	awaitDuration  = 5 * time.Second
	retryAfterIdle = 10 * time.Millisecond
)

type options struct {
	endpoint, topic    string
	records            int64
	size, pending      int
	receivers, batch   int
	invisible, timeout time.Duration
	requestTimeout     time.Duration
	consume            bool
	cpuProfile         string
}

func main() {
	var o options
	flag.StringVar(&o.endpoint, "endpoint", "127.0.0.1:8081", "the proxy's gRPC endpoint")
	flag.StringVar(&o.topic, "topic", "barerocketmq", "topic to send to and receive from (it must exist)")
	flag.Int64Var(&o.records, "records", 1_000_000, "messages to send and receive")
	flag.IntVar(&o.size, "size", 100, "message size in bytes")
	flag.IntVar(&o.pending, "pending", 1000, "sends in calls to the proxy at once, at most (the driver's maxInFlightRequests)")
	flag.IntVar(&o.receivers, "receivers", 32, "receive loops of the consumer (the driver's maxInFlightReceives)")
	flag.IntVar(&o.batch, "batch", 32, "messages one receive call takes at most (the driver's receiveBatchSize)")
	flag.DurationVar(&o.invisible, "invisible", 30*time.Second, "how long a received message stays invisible (the driver's invisibleDurationMs)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.DurationVar(&o.requestTimeout, "request-timeout", 3*time.Second, "how long the client waits for the proxy's answer to a call (the driver's requestTimeoutMs)")
	flag.BoolVar(&o.consume, "consume", true, "receive -records messages")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	stop, err := toolcompare.CPUProfile(o.cpuProfile)
	if err == nil {
		quietClient()
		err = run(o)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "barerocketmq:", err)
		os.Exit(1)
	}
}

// quietClient keeps the client's log to its errors, in a directory of
// the system's temporary one, and makes its connections plaintext with
// no log of every call, as the driver does.
func quietClient() {
	_ = os.Setenv(rmq.CLIENT_LOG_ROOT, filepath.Join(os.TempDir(), "barerocketmq-client"))
	_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "error")
	rmq.ResetLogger()
	connect := rmq.NewRpcClient
	rmq.NewRpcClient = func(target string, opts ...rmq.RpcClientOption) (rmq.RpcClient, error) {
		return connect(target, append(opts, rmq.WithRpcClientConnOption(rmq.WithZapLogger(zap.NewNop()),
			rmq.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()))))...)
	}
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var consumed chan struct{}
	if o.consume {
		sc, done, err := consume(ctx, o)
		if err != nil {
			return err
		}
		defer func() { _ = sc.GracefulStop() }()
		consumed = done
	}
	start := time.Now()
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
		return fmt.Errorf("not every message received within %s", o.timeout)
	}
	end := time.Now()
	fmt.Printf("records=%d rate=%.0f produce=%.0f consume=%.0f\n", o.records, rate(end), rate(produced), rate(end))
	return nil
}

// newClient is the client's constructor with the request timeout (the
// client's route timeout is that of every call).
func (o options) newClient(c *rmq.Config, opts ...rmq.ClientOption) (rmq.Client, error) {
	return rmq.NewClient(c, append(opts, rmq.WithQueryRouteTimeout(o.requestTimeout))...)
}

// config is the client's config, of a consumer group or none.
func (o options) config(group string) *rmq.Config {
	return &rmq.Config{Endpoint: o.endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}}
}

// produce sends o.records messages with at most o.pending in calls to
// the proxy, and returns once every one is acknowledged.
func produce(ctx context.Context, o options) error {
	p, err := rmq.NewProducer(o.config(""), rmq.WithTopics(o.topic), rmq.WithMaxAttempts(maxAttempts), rmq.WithClientFunc(o.newClient))
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		return fmt.Errorf("producer of topic %q at %s: %w", o.topic, o.endpoint, err)
	}
	defer func() { _ = p.GracefulStop() }()
	var failed atomic.Pointer[error]
	var pending sync.WaitGroup
	// free holds the messages not in a call, at most o.pending of them
	// in calls: the client keeps a message until its callback, which
	// hands it back. Each message has its callback, bound once, as the
	// driver binds a slot's; all share one body.
	type slot struct {
		m    rmq.Message
		sent func(context.Context, []*rmq.SendReceipt, error)
	}
	free := make(chan *slot, o.pending)
	for range o.pending {
		s := &slot{}
		s.sent = func(_ context.Context, _ []*rmq.SendReceipt, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			free <- s
			pending.Done()
		}
		free <- s
	}
	body := make([]byte, o.size)
	for range o.records {
		s := <-free
		pending.Add(1)
		s.m = rmq.Message{Topic: o.topic, Body: body}
		p.SendAsync(ctx, &s.m, s.sent)
	}
	idle := make(chan struct{})
	go func() {
		pending.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-ctx.Done():
		return fmt.Errorf("not every send acknowledged within %s", o.timeout)
	}
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// consume starts a simple consumer of the topic's new group and counts
// o.records deliveries in o.receivers receive loops; the channel closes
// at the last.
func consume(ctx context.Context, o options) (rmq.SimpleConsumer, chan struct{}, error) {
	group := o.topic + "_barerocketmq"
	sc, err := rmq.NewSimpleConsumer(o.config(group), rmq.WithAwaitDuration(awaitDuration),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{o.topic: rmq.SUB_ALL}), rmq.WithClientFuncForSimpleConsumer(o.newClient))
	if err == nil {
		err = sc.Start()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("simple consumer of topic %q, group %q at %s: %w", o.topic, group, o.endpoint, err)
	}
	done := make(chan struct{})
	var n atomic.Int64
	for range o.receivers {
		go func() {
			// acked is closed when the loop's previous batch is
			// acknowledged.
			acked := make(chan struct{})
			close(acked)
			for ctx.Err() == nil {
				msgs, err := sc.Receive(ctx, int32(o.batch), o.invisible)
				if err != nil {
					// No message within the long poll: try again shortly.
					time.Sleep(retryAfterIdle)
					continue
				}
				<-acked
				acked = make(chan struct{})
				go func(done chan struct{}) {
					defer close(done)
					ack(ctx, sc, msgs)
				}(acked)
				// Exactly one loop's batch crosses the count.
				if after := n.Add(int64(len(msgs))); after >= o.records && after-int64(len(msgs)) < o.records {
					close(done)
				}
			}
		}()
	}
	return sc, done, nil
}

// ack acknowledges a batch, one call per message, at once.
func ack(ctx context.Context, sc rmq.SimpleConsumer, msgs []*rmq.MessageView) {
	var wg sync.WaitGroup
	for _, mv := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = sc.Ack(ctx, mv)
		}()
	}
	wg.Wait()
}
