package kafka_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/testbroker"
)

// TestKafkaMetricsEndpoint runs a broker as 'local up kafka' does and,
// once a record has been produced and consumed, reads its metrics
// endpoint: the exporter serves exactly the series brokerbench reads,
// and nothing of the JVM or the process. TestKafkaJMXConfigServesWhatIsRead
// checks the config without a JVM; this checks that the exporter takes it
// so.
func TestKafkaMetricsEndpoint(t *testing.T) {
	testbroker.Need(t, testbroker.Kafka)
	b, err := testbroker.Start(29892)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "metrics"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "metrics", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for got := 0; got == 0; {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record consumed: %v", err)
		}
		got = f.NumRecords()
	}

	url := b.Cluster.Status().Nodes[0].MetricsURL
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var other []string
	for _, line := range strings.Split(string(page), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "kafka_") {
			other = append(other, line)
		}
	}
	if len(other) > 0 {
		t.Errorf("%s serves %d samples of series brokerbench does not read, from %q on: only the broker's are read", url, len(other), other[0])
	}
	counters, gauges, err := brokermetrics.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for k := range counters {
		served = append(served, k)
	}
	for k := range gauges {
		served = append(served, k)
	}
	slices.Sort(served)
	want := kafka.JMXSeries()
	slices.Sort(want)
	if !slices.Equal(served, want) {
		t.Errorf("%s serves\n  %s\nwant\n  %s", url, strings.Join(served, "\n  "), strings.Join(want, "\n  "))
	}
}
