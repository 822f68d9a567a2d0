package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// misnamedCluster is the memory driver answering, as a broker would, that
// the cluster its config names does not exist.
type misnamedCluster struct{ driver.Driver }

func (misnamedCluster) BrokerVersion(context.Context) (string, error) {
	return "", fmt.Errorf("%w: broker cluster \"ClusterName\" is not known to the name servers: check clusterName", workload.ErrInvalid)
}

func init() {
	brokers.Register(brokers.Module{
		Name: "memory-misnamed-cluster", InProcess: true, Capabilities: memory.Capabilities, Docs: "docs/drivers/memory.md",
		NoLocal: "a test broker in this process", NoMetrics: "a test broker",
		New: func(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
			d, err := memory.New(dc, opts)
			return misnamedCluster{d}, err
		},
	})
}

// TestDriverConfigNamingNothingIsBadInput: a broker that answers that
// what the driver config names does not exist (a cluster name) is an
// input error (exit 2), saying what to check, not a failed run.
func TestDriverConfigNamingNothingIsBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	wl := filepath.Join(dir, "w.yaml")
	text := "name: w\ntopics: 1\npartitionsPerTopic: 1\nmessageSize: 100\nproducersPerTopic: 1\nsubscriptionsPerTopic: 1\n" +
		"rate: 100\nwarmup: 0s\nduration: 1s\ndriver:\n  driver: memory-misnamed-cluster\n"
	if err := os.WriteFile(wl, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultRunOptions()
	o.Out, o.Progress = filepath.Join(dir, "r.json"), false
	var stdout, stderr strings.Builder
	err := Run(context.Background(), IO{Out: &stdout, Err: &stderr}, wl, o)
	if KindOf(err) != BadInput || !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), "check clusterName") {
		t.Errorf("error %v (kind %v), want bad input naming the setting", err, KindOf(err))
	}
}
