package engine

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/kube"
)

// TestKubeInterruptsSayWhatApplies: Ctrl-C on 'k8s run' says what it does
// there (no drain to abandon): the first stops the run, the second stops
// waiting for the partial results and lets a third end the process.
func TestKubeInterruptsSayWhatApplies(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	var unhooked atomic.Int32
	var out lockedBuffer
	sig := watch(context.Background(), &out, sigs, func() { unhooked.Add(1) }, kubeStages)
	defer sig.Release()
	wait := func(ctx context.Context, what string) {
		t.Helper()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not cancelled:\n%s", what, out.String())
		}
	}
	sigs <- os.Interrupt
	wait(sig.Stop, "stop")
	if sig.Abandon.Err() != nil {
		t.Error("one interrupt abandoned the wait")
	}
	first := out.String()
	if !strings.Contains(first, "interrupt: stopping the run on Kubernetes; interrupt again to stop waiting for the coordinator's partial results (the run's objects are deleted either way)") {
		t.Errorf("first interrupt:\n%s", first)
	}
	sigs <- os.Interrupt
	wait(sig.Abandon, "abandon")
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

// TestKubeOutputNamesTheLocalPaths: the lines of a coordinator's output
// that name its result files in its pod reach the user with the paths
// 'k8s run' copies them to.
func TestKubeOutputNamesTheLocalPaths(t *testing.T) {
	dir := "/tmp/brokerbench-results-1"
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
		if _, err := kube.ReadFilesAs(bytes.NewReader(log.Bytes()), &pass, kubeLocalPaths("results/r.json", tc.omb)); err != nil {
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
