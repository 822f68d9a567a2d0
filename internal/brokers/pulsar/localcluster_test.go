package pulsar

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers/brokertest"
	"github.com/brokerbench/brokerbench/internal/brokers/omblayout"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/testbroker"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestLocalClusterReplicates starts a real cluster of 3 brokers (its
// brokers' binary protocol on port 29660): the driver passes the
// conformance suite on it with OMB's persistence (ensembles of 3, acks
// from 2); brokerbench runs OMB's pulsar.yaml and
// pulsar-effectively-once.yaml on it, as OMB ships them, from the root
// of OMB's layout; a topic's ledger is on the 3 bookies, written to all and
// acknowledged by 2; and a broker killed, then started again, serves
// again, as a node fault does it.
func TestLocalClusterReplicates(t *testing.T) {
	testbroker.Need(t, "a local Pulsar cluster of 3 brokers (Java 17+ and Maven)")
	b, err := testbroker.StartLocal("pulsar", 29660, func(c *local.Cluster) { c.Brokers = 3 })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	c := b.Cluster
	if st := c.Status(); !st.Running || len(st.Nodes) != 4 || len(st.Bootstrap) != 3 {
		t.Fatalf("status %+v: want ZooKeeper and 3 brokers running", st)
	}
	endpoints := LocalKind.Endpoints(c.Status(), "")
	omb := ombDriver(t, "pulsar.yaml")
	omb.Common = slices.DeleteFunc(omb.Common, func(p workload.Property) bool { return p.Key == "serviceUrl" || p.Key == "httpUrl" })
	connect := func(t *testing.T) driver.Driver {
		t.Helper()
		d, err := New(omb, driver.Options{Endpoints: endpoints})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	brokertest.Run(t, "pulsar", drivertest.Target{Connect: connect, Unreachable: target(nil).Unreachable})
	for _, file := range []string{"driver-pulsar/pulsar.yaml", "driver-pulsar/pulsar-effectively-once.yaml"} {
		t.Run(path.Base(file), func(t *testing.T) {
			omblayout.Run(t, file, omblayout.Target{LocalPort: c.Port, Brokers: 3, StateDir: c.StateDir})
		})
	}

	d := connect(t)
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := "bb-ledger-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := d.CreateTopic(ctx, driver.TopicSpec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	defer d.DeleteTopic(ctx, topic)
	produce(ctx, t, d, topic, 100)
	cfg := d.(*Driver).cfg
	var stats struct {
		Ledgers []struct {
			LedgerID int64  `json:"ledgerId"`
			Metadata string `json:"metadata"`
		} `json:"ledgers"`
	}
	path := topicPath(cfg.tenant, cfg.namespace, topic+"-partition-0") + "/internalStats?metadata=true"
	if err := d.(*Driver).admin.do(ctx, http.MethodGet, path, nil, &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Ledgers) == 0 {
		t.Fatalf("the topic has no ledger: %+v", stats)
	}
	meta := stats.Ledgers[len(stats.Ledgers)-1].Metadata
	for _, want := range []string{"ensembleSize=3", "writeQuorumSize=3", "ackQuorumSize=2"} {
		if !regexp.MustCompile(`\b` + want + `\b`).MatchString(meta) {
			t.Errorf("the topic's ledger metadata lacks %s: %s", want, meta)
		}
	}
	bookies := map[string]bool{}
	for _, m := range regexp.MustCompile(`127\.0\.1\.[1-3]:\d+`).FindAllString(meta, -1) {
		bookies[m] = true
	}
	if len(bookies) != 3 {
		t.Errorf("the topic's ledger is on bookies %v, want the 3 of the cluster: %s", bookies, meta)
	}

	// A broker killed, as a node fault kills it, and started again.
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	if st := c.Status(); st.Running || st.Nodes[2].Running {
		t.Fatalf("after killing node 2: %+v", st)
	}
	began := time.Now()
	if err := c.Restart(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Up(ctx); err != nil { // the cluster as it is: waits until it is ready
		t.Fatal(err)
	}
	t.Logf("node 2 killed and started again: the cluster was ready after %s", time.Since(began).Round(time.Second))
	produce(ctx, t, d, topic, 100)
}

// produce sends n messages to topic and fails the test unless every one
// is acknowledged.
func produce(ctx context.Context, t *testing.T, d driver.Driver, topic string, n int) {
	t.Helper()
	errs := make(chan error, n)
	p, err := d.NewProducer(ctx, driver.ProducerSpec{Topic: topic, MaxMessageBytes: 64, MaxInFlight: n}, func(_ *driver.Message, err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		p.Send(ctx, &driver.Message{Value: fmt.Appendf(nil, "message %d", i)})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
