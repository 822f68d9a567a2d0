// Command barekafka is the ceiling for brokerbench's Kafka load generator: a
// bare franz-go producer or consumer loop with no pacing, no header, no
// measurement and no accounting. Its client settings are those brokerbench
// derives from the Java client's defaults for the same workload (acks=1,
// linger.ms=5, batch.size=16384, max.in.flight.requests.per.connection=5,
// sticky uniform-bytes partitioning), so the difference between the two is
// brokerbench's own cost.
//
//	barekafka produce -broker 127.0.0.1:9092 -topic t -records 8000000 -size 100
//	barekafka consume -broker 127.0.0.1:9092 -topic t -records 8000000
//
// -cpuprofile FILE writes a CPU profile of the run, to set beside
// brokerbench's (run --pprof). -values N sends N distinct values in turn
// instead of one: a load generator that stamps each message keeps a value
// per message in flight (brokerbench up to 16,384 per producer), and the
// client copies each from memory that has left the cache, where one value
// stays in it. -stamp also writes each record's number into its value just
// before producing it, as a load generator writes its header, with at most
// N-1 records buffered so that no value is written while its last record
// is in flight: the ceiling of a producer that stamps every message.
//
// It prints one line: "records=N seconds=S rate=R" (S from the first send or
// poll to the last acknowledgement or record, client start-up excluded).
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "produce" && os.Args[1] != "consume") {
		fmt.Fprintln(os.Stderr, "usage: barekafka produce|consume -broker ADDR -topic T -records N [-size BYTES]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	broker := fs.String("broker", "127.0.0.1:9092", "bootstrap address")
	topic := fs.String("topic", "", "topic")
	records := fs.Int64("records", 1_000_000, "records to produce or consume")
	size := fs.Int("size", 100, "record value size in bytes (produce)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	values := fs.Int("values", 1, "distinct values sent in turn (produce)")
	stamp := fs.Bool("stamp", false, "write each record's number into its value before producing it, at most -values - 1 records buffered (produce; needs -values 2 or more)")
	_ = fs.Parse(os.Args[2:])
	if *topic == "" || *records <= 0 || *values <= 0 || *stamp && (*values < 2 || *size < 8) {
		fmt.Fprintln(os.Stderr, "barekafka: -topic, a positive -records and a positive -values are required; -stamp needs -values 2 or more and -size 8 or more")
		os.Exit(2)
	}
	var secs float64
	stop, err := toolcompare.CPUProfile(*cpuProfile)
	if err == nil {
		if os.Args[1] == "produce" {
			secs, err = produce(*broker, *topic, *records, *size, *values, *stamp)
		} else {
			secs, err = consume(*broker, *topic, *records)
		}
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "barekafka:", err)
		os.Exit(1)
	}
	fmt.Printf("records=%d seconds=%.6f rate=%.1f\n", *records, secs, float64(*records)/secs)
}

func produce(broker, topic string, n int64, size, distinct int, stamp bool) (float64, error) {
	buffered := 65536
	if stamp {
		// Record i's value is written before record i is produced: with
		// at most distinct-1 records buffered, record i-distinct, the
		// value's last, is then done.
		buffered = distinct - 1
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(broker),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(5),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(16384),
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(16384, true, true, nil)),
		kgo.MaxBufferedRecords(buffered),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	values := make([][]byte, distinct)
	for i := range values {
		values[i] = make([]byte, size)
		_, _ = rand.Read(values[i])
	}
	var failed atomic.Int64
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	ctx := context.Background()
	start := time.Now()
	for i := range n {
		v := values[i%int64(distinct)]
		if stamp {
			binary.LittleEndian.PutUint64(v, uint64(i))
		}
		cl.Produce(ctx, &kgo.Record{Value: v}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	secs := time.Since(start).Seconds()
	if f := failed.Load(); f > 0 {
		return 0, fmt.Errorf("%d records failed", f)
	}
	return secs, nil
}

func consume(broker, topic string, n int64) (float64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(broker),
		kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(fmt.Sprintf("barekafka-%d", time.Now().UnixNano())),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxPartitionBytes(1<<20),
		kgo.FetchMaxBytes(50<<20),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var got int64
	var start time.Time
	for got < n {
		fetches := cl.PollRecords(ctx, 500) // max.poll.records, as brokerbench polls
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("consumed %d of %d records: %w", got, n, err)
		}
		if start.IsZero() {
			start = time.Now()
		}
		got += int64(fetches.NumRecords())
	}
	return time.Since(start).Seconds(), nil
}
