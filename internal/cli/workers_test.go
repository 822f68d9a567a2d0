package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
)

// startWorkerProcess starts 'brokerbench worker' as a process of its own
// (this test binary) on addr and waits until it serves.
func startWorkerProcess(t *testing.T, addr string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), subprocessArgs+"="+strings.Join([]string{"worker", "--listen", addr}, "\n"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "serving") {
		if time.Now().After(deadline) {
			t.Fatalf("worker on %s did not start:\n%s", addr, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, stderr
}

// spreadWorkload writes a workload with three producers and three
// consumers of one subscription on one topic, so that consumers receive
// messages from every worker's producers.
func spreadWorkload(t *testing.T, duration string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spread.yaml")
	text := fmt.Sprintf(`name: spread
topics: 1
partitionsPerTopic: 6
messageSize: 200
producersPerTopic: 3
subscriptionsPerTopic: 1
consumersPerSubscription: 3
rate: 3000
warmup: 1s
duration: %s
driver:
  driver: kafka
  producerConfig: {linger.ms: 1}
`, duration)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunAcrossWorkerProcesses spreads one workload over three worker
// processes, each on its own loopback address: the merged run must hold
// the rate and account for every message exactly, messages produced on
// one worker being consumed on others, and the workers must have started
// together.
func TestRunAcrossWorkerProcesses(t *testing.T) {
	b := lazyBroker.Get(t)
	var urls []string
	for _, addr := range []string{"127.0.0.11:29771", "127.0.0.12:29772", "127.0.0.13:29773"} {
		startWorkerProcess(t, addr)
		urls = append(urls, "http://"+addr)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := execute("run", spreadWorkload(t, "4s"), "--broker", b.Addr, "--workers", strings.Join(urls, ","),
		"--out", out, "--quiet", "--max-send-lag", "200ms")
	// On a busy machine the rate may be missed; the accounting must be
	// exact whatever happens.
	if !completed(t, code) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if res.Partial || c.Sent == 0 || c.Acked != c.Sent || c.Consumed != c.Acked || c.Lost != 0 || c.Duplicated != 0 || c.Unexpected != 0 ||
		c.StoredByBroker == nil || *c.StoredByBroker != c.Acked || len(c.Subscriptions) != 1 || c.Subscriptions[0].Delivered != c.Acked {
		t.Fatalf("accounting: %+v\n%s", c, stdout)
	}
	d := res.Distributed
	if d == nil || len(d.Workers) != 3 || d.Placement != "spread" {
		t.Fatalf("distribution: %+v", d)
	}
	var acked int64
	for _, w := range d.Workers {
		if w.Producers != 1 || w.Consumers != 1 || w.Measured.Acked == 0 || w.Measured.Consumed == 0 || w.Error != "" {
			t.Errorf("worker %+v", w)
		}
		// One machine, one clock: the offsets are within their bounds of 0.
		if w.ClockOffsetMs > w.ClockErrorMs+0.5 || -w.ClockOffsetMs > w.ClockErrorMs+0.5 || w.ClockErrorMs > 50 {
			t.Errorf("worker %s: clock offset %.3f ± %.3f ms on one machine", w.Address, w.ClockOffsetMs, w.ClockErrorMs)
		}
		acked += w.Measured.Acked
	}
	if acked != res.Measured.Acked {
		t.Errorf("workers measured %d acknowledgements, the merged run %d", acked, res.Measured.Acked)
	}
	// The workers start at one instant: apart by no more than 100 ms
	// and what this machine's scheduler made a timer wait (a worker's
	// start is a timer too). Without the barrier they start one after
	// another, a round trip and a setup apart.
	limit := 100.0
	if sd := res.Measured.SchedulingDelay; sd != nil {
		limit += sd.Max
	}
	if d.StartSpreadMs > limit {
		t.Errorf("the workers started %.3f ms apart (limit %.0f ms)", d.StartSpreadMs, limit)
	}
	for _, want := range []string{"3 workers (placement spread)", "127.0.0.12:29772"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

// TestLostWorkerIsReported kills one of two workers mid-run: the run goes
// on with the other, ends partial with exit 1, names the lost worker, and
// its accounting stays consistent (nothing called lost that the dead
// worker may have received).
func TestLostWorkerIsReported(t *testing.T) {
	b := lazyBroker.Get(t)
	startWorkerProcess(t, "127.0.0.14:29774")
	victim, victimLog := startWorkerProcess(t, "127.0.0.15:29775")
	out := filepath.Join(t.TempDir(), "r.json")
	// Killed 2.5 s into the 6 s measurement however long the set-up took
	// (the start comes at least 300 ms after the worker hears of it).
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(victimLog.String(), "starts in") && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2500 * time.Millisecond)
		_ = victim.Process.Signal(syscall.SIGKILL)
	}()
	w := spreadWorkload(t, "6s")
	code, stdout, stderr := execute("run", w, "--broker", b.Addr, "--workers", "127.0.0.14:29774,127.0.0.15:29775",
		"--out", out, "--quiet", "--max-send-lag", "200ms", "--drain-timeout", "5s")
	if code != ExitRunFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitRunFailed, stdout, stderr)
	}
	res, err := results.Read(out)
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if !res.Partial || !strings.Contains(res.PartialReason, "127.0.0.15:29775") || !strings.Contains(res.PartialReason, "lost") {
		t.Errorf("partial %v: %q", res.Partial, res.PartialReason)
	}
	lost := res.Distributed.Workers[1]
	if !strings.Contains(lost.Error, "lost") || res.Distributed.Workers[0].Error != "" || res.Distributed.Workers[0].Measured.Acked == 0 {
		t.Errorf("workers: %+v", res.Distributed.Workers)
	}
	c := res.Counts
	if c.Lost != 0 || c.Sent == 0 || c.Acked > c.Sent || len(res.Intervals) == 0 {
		t.Errorf("accounting after a lost worker: %+v", c)
	}
	if !strings.Contains(stdout, "WORKER http://127.0.0.15:29775 lost") {
		t.Errorf("summary does not name the lost worker:\n%s", stdout)
	}
}

// TestBadWorkerFlags: bad worker flags and a split that leaves a worker
// idle are refused before any broker or worker is reached (the broker
// address here answers nothing).
func TestBadWorkerFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--local-workers", "-1"}, "give 1 to 256"},
		{[]string{"--local-workers", "2", "--placement", "diagonal"}, "use \"spread\" or \"by-topic\""},
		{[]string{"--workers", "ftp://x:1"}, "give http://host:port"},
		{[]string{"--workers", "127.0.0.2:7070", "--local-workers", "2"}, "one of --workers"},
		{[]string{"--placement", "by-topic"}, "applies only with"},
		{[]string{"--local-workers", "3"}, "would run nothing"},
	} {
		code, _, stderr := execute(append([]string{"run", "../../workloads/quick.yaml", "--broker", "127.0.0.1:1", "--quiet"}, tc.args...)...)
		if code != ExitInvalidInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, stderr)
		}
	}
}

// TestK8sManifestsMatchDeploy: the plain manifests in deploy/kubernetes/
// are what 'k8s run --manifests' writes for them (the API server checks
// them in internal/kube); regenerate them with the command in the test
// when the objects change.
func TestK8sManifestsMatchDeploy(t *testing.T) {
	code, stdout, stderr := execute("k8s", "run", "../../workloads/quick.yaml", "--workers", "2", "--broker", "kafka.kafka.svc:9092",
		"--name", "brokerbench-quick", "--image", "brokerbench:latest", "--namespace", "default", "--manifests")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, err := os.ReadFile("../../deploy/kubernetes/quick-run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("deploy/kubernetes/quick-run.yaml is not what 'brokerbench k8s run workloads/quick.yaml --workers 2 --broker kafka.kafka.svc:9092 --name brokerbench-quick --image brokerbench:latest --namespace default --manifests' writes: regenerate it")
	}
}

// TestK8sRefusesBeforeCreating: what cannot run is refused before any
// object is made, with the reason.
func TestK8sRefusesBeforeCreating(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "3", "--broker", "kafka:9092"}, "would run nothing"},
		{[]string{"--workers", "2", "--placement", "by-topic", "--broker", "kafka:9092"}, "at least one topic per worker"},
		{[]string{"--workers", "1", "--pull-policy", "Sometimes", "--broker", "kafka:9092"}, "--pull-policy"},
		{[]string{"--workers", "1", "--kubeconfig", "/nonexistent/kubeconfig", "--broker", "kafka:9092"}, "no Kubernetes cluster"},
		{[]string{"--workers", "1", "--dry-run"}, "give --broker"},
	} {
		code, _, stderr := execute(append([]string{"k8s", "run", "../../workloads/quick.yaml"}, tc.args...)...)
		if code != ExitInvalidInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s", tc.args, code, stderr)
		}
	}
}
