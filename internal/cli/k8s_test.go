package cli

import (
	"os"
	"strings"
	"testing"

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

// TestK8sCoordinatorNamesItsDirectory: the coordinator names the directory in
// its pod first, and removes it once its files are written out.
func TestK8sCoordinatorNamesItsDirectory(t *testing.T) {
	_, stdout, _ := execute("k8s", "coordinator", "--", "run", "/nonexistent/workload.yaml")
	first, _, _ := strings.Cut(stdout, "\n")
	dir, ok := strings.CutPrefix(first, "BROKERBENCH-RESULTS-DIR ")
	if !ok || !strings.HasPrefix(dir, os.TempDir()) {
		t.Fatalf("the coordinator's output does not start with its results directory:\n%s", stdout)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the coordinator left %s: %v", dir, err)
	}

}

// TestK8sDryRunAgainstAPIServer: 'k8s run --dry-run' reaches a real
// kube-apiserver through --kubeconfig, which validates the run's objects
// strictly and stores none.
func TestK8sDryRunAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t, 29829, 29849)
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
