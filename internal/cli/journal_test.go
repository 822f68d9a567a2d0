package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/engine"

	"github.com/brokerbench/brokerbench/internal/brokers/kafka"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestKilledRunLeavesJournal: a run killed outright (SIGKILL) leaves its
// journal, which 'report' reads as a partial result, and its topic, which
// 'clean' removes; then the registry is empty.
func TestKilledRunLeavesJournal(t *testing.T) {
	b := lazyBroker.Get(t)
	dir := t.TempDir()
	t.Setenv(engine.RegistryEnv, filepath.Join(dir, "registry"))
	out := filepath.Join(dir, "r.json")
	args := []string{"run", "../../workloads/quick.yaml", "--broker", b.Addr, "--warmup", "1s", "--duration", "60s", "--quiet", "--out", out}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), subprocessArgs+"="+strings.Join(args, "\n"))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	journal := results.JournalPath(out)
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(journal)
		if strings.Count(string(data), `"phase":"measure"`) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no measured interval in the journal after 60 s:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	res, err := results.Read(journal)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Partial || !strings.Contains(res.PartialReason, "journal") || res.Measured.DurationSeconds < 1.5 ||
		res.Measured.Acked == 0 || res.Counts.Acked < res.Measured.Acked || res.Measured.PublishLatency.Count != res.Measured.Acked {
		t.Fatalf("rebuilt run: partial %v (%s), measured %+v, counts %+v", res.Partial, res.PartialReason, res.Measured, res.Counts)
	}
	html := filepath.Join(dir, "report.html")
	if code, stdout, stderr := execute("report", journal, "-o", html); code != ExitOK {
		t.Fatalf("report of the journal: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if page, _ := os.ReadFile(html); !strings.Contains(string(page), "rebuilt from the journal") {
		t.Error("the report does not say the run was rebuilt from its journal")
	}

	code, stdout, stderr2 := execute("clean", "--list")
	topic := "bb-" + res.ID + "-000"
	if code != ExitOK || !strings.Contains(stdout, topic) {
		t.Fatalf("clean --list: exit %d, want %s listed\n%s\n%s", code, topic, stdout, stderr2)
	}
	if code, stdout, stderr := execute("clean", "--broker", b.Addr); code != ExitOK || !strings.Contains(stderr, "removed 1 topic(s) left by run "+res.ID) {
		t.Fatalf("clean: exit %d\n%s\n%s", code, stdout, stderr)
	}
	d, err := kafka.New(&workload.DriverConfig{Name: "kafka", Source: "test", ReplicationFactor: 1}, driver.Options{Endpoints: []string{b.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.DeleteTopic(context.Background(), topic); !errors.Is(err, driver.ErrTopicNotFound) {
		t.Errorf("topic %s after clean: delete gives %v, want it gone", topic, err)
	}
	if _, stdout, _ := execute("clean", "--list"); !strings.Contains(stdout, "no run left topics behind") {
		t.Errorf("registry after clean:\n%s", stdout)
	}
}
