package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/kube"
	"github.com/brokerbench/brokerbench/internal/kube/kubetest"
)

// TestK8sHelpNamesTheClusterSocket: the import command 'k8s run --help'
// shows reaches the containerd that hack/local-kubernetes.sh runs (with its
// default state directory), not the machine's default one.
func TestK8sHelpNamesTheClusterSocket(t *testing.T) {
	script, err := os.ReadFile("../../hack/local-kubernetes.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"K8S_DIR=${K8S_DIR:-/tmp/brokerbench-k8s}", "sock=$K8S_DIR/containerd/containerd.sock"} {
		if !strings.Contains(string(script), "\n"+line+"\n") {
			t.Errorf("hack/local-kubernetes.sh no longer sets %s: update localContainerdSocket", line)
		}
	}
	code, stdout, stderr := execute("k8s", "run", "--help")
	want := "ctr --address /tmp/brokerbench-k8s/containerd/containerd.sock -n k8s.io images import bin/brokerbench-image.oci.tar"
	if code != ExitOK || !strings.Contains(stdout, want) {
		t.Errorf("exit %d; 'k8s run --help' lacks %q:\n%s%s", code, want, stdout, stderr)
	}
	if _, stdout, _ = execute("k8s", "image", "--help"); !strings.Contains(stdout, "ctr --address SOCKET -n k8s.io images import FILE") {
		t.Errorf("'k8s image --help' shows no socket:\n%s", stdout)
	}
}

// TestK8sOutputNamesTheLocalPaths: the coordinator names the directory in
// its pod first, and the lines of its output that name its result files
// there reach the user with the paths 'k8s run' copies them to.
func TestK8sOutputNamesTheLocalPaths(t *testing.T) {
	_, stdout, _ := execute("k8s", "coordinator", "--", "run", "/nonexistent/workload.yaml")
	first, _, _ := strings.Cut(stdout, "\n")
	dir, ok := strings.CutPrefix(first, "BROKERBENCH-RESULTS-DIR ")
	if !ok || !strings.HasPrefix(dir, os.TempDir()) {
		t.Fatalf("the coordinator's output does not start with its results directory:\n%s", stdout)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the coordinator left %s: %v", dir, err)
	}

	// Its output as 'run' prints it, then its files.
	var log bytes.Buffer
	if err := kube.WriteResultsDir(&log, dir); err != nil {
		t.Fatal(err)
	}
	log.WriteString("results: " + dir + "/run.json (PARTIAL)\nOMB results: " + dir + "/omb.json\n")
	if err := kube.WriteFiles(&log, map[string][]byte{"run.json": []byte("{}"), "omb.json": []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		omb  string
		want []string
	}{
		{"", []string{"results: results/r.json (PARTIAL)\n", "OMB results: not copied here (give --omb-json to copy them)\n"}},
		{"results/omb.json", []string{"results: results/r.json (PARTIAL)\n", "OMB results: results/omb.json\n"}},
	} {
		var pass bytes.Buffer
		if _, err := kube.ReadFilesAs(bytes.NewReader(log.Bytes()), &pass, k8sLocalPaths("results/r.json", tc.omb)); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(pass.String(), w) {
				t.Errorf("--omb-json %q: the output lacks %q:\n%s", tc.omb, w, pass.String())
			}
		}
		if strings.Contains(pass.String(), dir) {
			t.Errorf("--omb-json %q: the output names the pod's directory:\n%s", tc.omb, pass.String())
		}
	}
}

// TestK8sInterruptsSayWhatApplies: Ctrl-C on 'k8s run' says what it does
// there (no drain to abandon): the first stops the run, the second stops
// waiting for the partial results and lets a third end the process.
func TestK8sInterruptsSayWhatApplies(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	var unhooked atomic.Int32
	var out lockedBuffer
	sig := k8sInterrupts(context.Background(), &out, sigs, func() { unhooked.Add(1) })
	defer sig.release()
	wait := func(ctx context.Context, what string) {
		t.Helper()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not cancelled:\n%s", what, out.String())
		}
	}
	sigs <- os.Interrupt
	wait(sig.stop, "stop")
	if sig.abandon.Err() != nil {
		t.Error("one interrupt abandoned the wait")
	}
	first := out.String()
	if !strings.Contains(first, "interrupt: stopping the run on Kubernetes; interrupt again to stop waiting for the coordinator's partial results (the run's objects are deleted either way)") {
		t.Errorf("first interrupt:\n%s", first)
	}
	sigs <- os.Interrupt
	wait(sig.abandon, "abandon")
	second := strings.TrimPrefix(out.String(), first)
	if !strings.Contains(second, "again: no longer waiting for the partial results; deleting the run's objects (interrupt once more to exit at once, leaving them)") {
		t.Errorf("second interrupt:\n%s", second)
	}
	if unhooked.Load() != 1 {
		t.Errorf("after the second interrupt the signals are unhooked %d times (want 1)", unhooked.Load())
	}
	if all := out.String(); strings.Contains(all, "drain") {
		t.Errorf("a k8s run's interrupt speaks of a drain:\n%s", all)
	}
}

// TestK8sDryRunAgainstAPIServer: 'k8s run --dry-run' reaches a real
// kube-apiserver through --kubeconfig, which validates the run's objects
// strictly and stores none.
func TestK8sDryRunAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t, 39829, 39849)
	code, _, stderr := execute("k8s", "run", "../../workloads/quick.yaml", "--workers", "2", "--broker", "kafka:9092",
		"--kubeconfig", srv.Kubeconfig, "--name", "bb-cli", "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, what := range []string{"ConfigMap bb-cli-config", "Service bb-cli-workers", "Job bb-cli-workers", "Job bb-cli-coordinator"} {
		if !strings.Contains(stderr, what+": validated by the API server (dry run)") {
			t.Errorf("the output does not say %s was validated:\n%s", what, stderr)
		}
	}
}
