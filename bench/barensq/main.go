// Command barensq is the ceiling of go-nsq for the NSQ comparison
// (bench/compare-nsq-tools): one producer publishing asynchronously (PUB,
// each acknowledged by nsqd in order) with a bounded number awaiting
// their acknowledgement, and one consumer of a channel with brokerbench's
// consumer settings, with nothing measured but the count. Each side has
// its own connection, configured as brokerbench's NSQ driver configures
// its own.
//
// With -produce and -consume (the default) both run in one process, on a
// channel made before the first publish, and it prints rate=R, the
// records from the first publish to the last delivery, beside produce=R
// (first publish to last acknowledgement) and consume=R. With -produce
// only, rate is the produce rate; with -consume only, the channel must
// already hold -records messages, and rate runs from the subscription to
// the last delivery.
//
//	barensq -nsqd 127.0.0.1:4150 -http 127.0.0.1:4151 -topic t -records 1000000 -size 100
//	barensq -topic t -channel c -produce=false [-cpuprofile FILE]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"time"

	gonsq "github.com/nsqio/go-nsq"
)

type options struct {
	nsqd, http, topic, channel   string
	records                      int64
	size, pending, maxInFlight   int
	outputBufferSize             int64
	outputBufferTimeout, timeout time.Duration
	produce, consume             bool
}

func main() {
	var o options
	flag.StringVar(&o.nsqd, "nsqd", "127.0.0.1:4150", "nsqd's TCP address")
	flag.StringVar(&o.http, "http", "127.0.0.1:4151", "nsqd's HTTP address, where the channel is made")
	flag.StringVar(&o.topic, "topic", "barensq", "topic to publish to and consume from")
	flag.StringVar(&o.channel, "channel", "barensq", "channel to consume from")
	flag.Int64Var(&o.records, "records", 1_000_000, "messages to publish and consume")
	flag.IntVar(&o.size, "size", 100, "message size in bytes")
	flag.IntVar(&o.pending, "pending", 16384, "publishes awaiting their acknowledgement, at most (brokerbench: 32 MiB / size, at most 16384)")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 1000, "messages the consumer holds unfinished (RDY), as the driver's maxInFlight")
	flag.Int64Var(&o.outputBufferSize, "output-buffer-size", 16384, "nsqd's buffer of what it sends the consumer, bytes, as the driver's outputBufferSize")
	flag.DurationVar(&o.outputBufferTimeout, "output-buffer-timeout", 250*time.Millisecond, "nsqd's flush timeout of that buffer, as the driver's outputBufferTimeoutMs")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.BoolVar(&o.produce, "produce", true, "publish -records messages")
	flag.BoolVar(&o.consume, "consume", true, "consume -records messages")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "barensq:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(o); err != nil {
		fail(err)
	}
}

// config is go-nsq's configuration as brokerbench's NSQ driver makes it.
func config() *gonsq.Config {
	c := gonsq.NewConfig()
	c.DialTimeout = 5 * time.Second
	c.MaxAttempts = 0
	c.LookupdPollInterval = time.Second
	return c
}

var silent = log.New(io.Discard, "", 0)

func run(o options) error {
	start := time.Now()
	consumed := make(chan error, 1)
	if o.consume {
		var err error
		if consumed, err = consume(o); err != nil {
			return err
		}
	}
	var produced time.Time
	if o.produce {
		if err := produce(o); err != nil {
			return err
		}
		produced = time.Now()
	}
	rate := func(end time.Time) float64 { return float64(o.records) / end.Sub(start).Seconds() }
	if !o.consume {
		fmt.Printf("records=%d rate=%.0f\n", o.records, rate(produced))
		return nil
	}
	select {
	case err := <-consumed:
		if err != nil {
			return err
		}
	case <-time.After(o.timeout):
		return fmt.Errorf("not every message consumed within %s", o.timeout)
	}
	end := time.Now()
	if !o.produce {
		fmt.Printf("records=%d rate=%.0f\n", o.records, rate(end))
		return nil
	}
	fmt.Printf("records=%d rate=%.0f produce=%.0f consume=%.0f\n", o.records, rate(end), rate(produced), rate(end))
	return nil
}

// produce publishes o.records messages with at most o.pending awaiting
// their acknowledgement, and returns once all are acknowledged.
func produce(o options) error {
	p, err := gonsq.NewProducer(o.nsqd, config())
	if err != nil {
		return err
	}
	defer p.Stop()
	p.SetLogger(silent, gonsq.LogLevelError)
	if err := p.Ping(); err != nil {
		return err
	}
	// done receives each transaction nsqd answered; one goroutine counts
	// them and frees a place in window for each.
	done := make(chan *gonsq.ProducerTransaction, o.pending)
	window := make(chan struct{}, o.pending)
	var failed atomic.Pointer[error]
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		for n := int64(0); n < o.records; n++ {
			t := <-done
			if t.Error != nil {
				failed.CompareAndSwap(nil, &t.Error)
			}
			<-window
		}
	}()
	body := make([]byte, o.size)
	for range o.records {
		window <- struct{}{}
		if err := p.PublishAsync(o.topic, body, done); err != nil {
			return err
		}
	}
	select {
	case <-acked:
	case <-time.After(o.timeout):
		return fmt.Errorf("not every publish acknowledged within %s", o.timeout)
	}
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// counter counts the messages it handles; go-nsq finishes each.
type counter struct {
	n, records int64
	done       chan struct{}
}

// HandleMessage implements gonsq.Handler; go-nsq calls it from one
// goroutine (the consumer's only handler).
func (c *counter) HandleMessage(*gonsq.Message) error {
	if c.n++; c.n == c.records {
		close(c.done)
	}
	return nil
}

// consume subscribes to o.channel of o.topic and counts o.records
// messages in the background; the channel says when it is done.
func consume(o options) (chan error, error) {
	cfg := config()
	cfg.MaxInFlight = o.maxInFlight
	cfg.OutputBufferSize, cfg.OutputBufferTimeout = o.outputBufferSize, o.outputBufferTimeout
	c, err := gonsq.NewConsumer(o.topic, o.channel, cfg)
	if err != nil {
		return nil, err
	}
	c.SetLogger(silent, gonsq.LogLevelError)
	h := &counter{records: o.records, done: make(chan struct{})}
	c.AddHandler(h)
	// go-nsq subscribes without waiting for nsqd's answer: the topic
	// and channel are made first over the HTTP API, as the driver makes
	// them, so that the channel receives every message published once
	// consume returns.
	for _, path := range []string{"/topic/create", "/channel/create"} {
		u := url.URL{Scheme: "http", Host: o.http, Path: path, RawQuery: url.Values{"topic": {o.topic}, "channel": {o.channel}}.Encode()}
		resp, err := http.Post(u.String(), "", nil)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("nsqd %s %s/%s: %s", path, o.topic, o.channel, resp.Status)
		}
	}
	if err := c.ConnectToNSQD(o.nsqd); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		<-h.done
		c.Stop()
		<-c.StopChan
		done <- nil
	}()
	return done, nil
}
