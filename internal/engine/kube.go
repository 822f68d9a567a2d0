package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/history"
	"github.com/brokerbench/brokerbench/internal/kube"
	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// KubeOptions are what a run on Kubernetes is asked to do besides its
// workload file. DefaultKubeOptions holds every default.
type KubeOptions struct {
	// Workers is the number of worker pods.
	Workers int
	// Namespace, Image, PullPolicy (Always, IfNotPresent or Never),
	// Kubeconfig and Context say where and what the pods run.
	Namespace, Image, PullPolicy, Kubeconfig, Context string
	// HostNetwork runs the pods on the node's network.
	HostNetwork bool
	// DriverFile and Broker are as RunOptions'; Broker as the pods reach
	// the broker.
	DriverFile, Broker string
	// Placement is spread or by-topic.
	Placement string
	// EnvFromSecret names a Secret whose keys become environment
	// variables in every pod.
	EnvFromSecret string
	// Out and OMBJSON are where the results are copied; Out "":
	// results/<workload>-k8s-<name>.json.
	Out, OMBJSON string
	// DryRun has the API server validate the objects; Manifests prints
	// them instead.
	DryRun, Manifests bool
	// Name prefixes the objects' names; "": bb- and 8 random hex digits.
	Name string
	// Overrides set workload fields; RunArgs are more arguments of the
	// coordinator's 'run' (the overrides among them).
	Overrides []Override
	RunArgs   []string
	// History is where the run is recorded once its results are copied
	// here (the coordinator records nothing in its pod).
	History history.Recording
}

// DefaultKubeOptions are the options of a run on Kubernetes the user
// says nothing about.
func DefaultKubeOptions() KubeOptions {
	return KubeOptions{Namespace: "default", Image: "brokerbench:" + sysinfo.Version, PullPolicy: "IfNotPresent", Placement: string(distributed.Spread)}
}

// RunOnKubernetes runs the workload in the file at path on worker pods,
// copies its results here and deletes what it created; it ends with the
// coordinator's exit status (an ExitStatus error) when the coordinator
// failed.
func RunOnKubernetes(ctx context.Context, io IO, path string, o KubeOptions) error {
	spec, w, err := kubeSpec(path, &o)
	if err != nil {
		return err
	}
	objs, err := kube.Build(spec)
	if err != nil {
		return badInput(err)
	}
	if o.Manifests {
		return printManifests(io, spec, objs)
	}
	out := o.Out
	if out == "" {
		out = filepath.Join("results", fmt.Sprintf("%s-k8s-%s.json", results.FileName(w.Name), spec.Name))
	}
	if !o.DryRun {
		if err := checkOutputs(out, o.OMBJSON); err != nil {
			return err
		}
	}
	cfg, err := kubeapi.Load(o.Kubeconfig, o.Context)
	if err != nil {
		return badInputf("no Kubernetes cluster to talk to: %w (give --kubeconfig, or set KUBECONFIG)", err)
	}
	sig := watchKubeInterrupts(ctx, io.Err)
	defer sig.Release()
	fmt.Fprintf(io.Err, "run %s: %d workers in namespace %s, image %s\n", spec.Name, spec.Workers, spec.Namespace, spec.Image)
	outcome, runErr := kube.Run(sig.Stop, cfg, objs, kube.Options{
		DryRun: o.DryRun, Log: io.Err, Abandon: sig.Abandon.Done(), LocalPaths: kubeLocalPaths(out, o.OMBJSON),
	})
	if o.DryRun {
		return failed(runErr)
	}
	paths, err := WriteKubeResults(outcome.Files, out, o.OMBJSON)
	written := "no results were copied"
	if len(paths) > 0 {
		written = "results: " + strings.Join(paths, ", ")
		fmt.Fprintf(io.Out, "copied out of the coordinator's log: %s\n", strings.Join(paths, ", "))
	}
	if err == nil && len(paths) > 0 {
		recordKubeRun(io, o.History, out)
	}
	switch {
	case sig.Stop.Err() != nil:
		return WithKind(Interrupted, fmt.Errorf("interrupted; %s", written))
	case runErr != nil:
		return failed(errors.Join(runErr, err))
	case err != nil:
		return failed(err)
	case outcome.ExitCode != 0:
		return &ExitStatus{Code: outcome.ExitCode, Err: fmt.Errorf("the coordinator exited %d (see its output above); %s", outcome.ExitCode, written)}
	}
	return nil
}

// printManifests prints the run's objects as YAML, with how to apply
// them by hand.
func printManifests(io IO, spec kube.Spec, objs *kube.Objects) error {
	y, err := objs.YAML()
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, `# One brokerbench run on Kubernetes, as 'brokerbench k8s run --manifests' wrote it.
# Apply it, wait for the coordinator Job to complete, copy its results, delete it:
#   kubectl apply -f FILE
#   kubectl wait --for=condition=complete --timeout=30m -n %[1]s job/%[2]s-coordinator
#   kubectl logs -n %[1]s job/%[2]s-coordinator | brokerbench k8s results --out run.json
#   kubectl delete -f FILE
`, spec.Namespace, spec.Name)
	_, err = io.Out.Write(y)
	return err
}

// kubeSpec checks the workload and options here, before anything is
// created, and describes the run's objects.
func kubeSpec(path string, o *KubeOptions) (kube.Spec, *workload.Workload, error) {
	w, err := workload.Load(path)
	if err != nil {
		return kube.Spec{}, nil, err
	}
	if err := applyOverrides(w, o.Overrides); err != nil {
		return kube.Spec{}, nil, err
	}
	placement, err := distributed.ParsePlacement(o.Placement)
	if err != nil {
		return kube.Spec{}, nil, badInputf("--placement: %w", err)
	}
	if err := distributed.CheckWorkload(w); err != nil {
		return kube.Spec{}, nil, badInputf("%s: %w", path, err)
	}
	if err := distributed.CheckSpread(w, o.Workers, placement); err != nil {
		return kube.Spec{}, nil, badInputf("--workers %d: %w", o.Workers, err)
	}
	dc, err := driverConfig(w, o.DriverFile)
	if err != nil {
		return kube.Spec{}, nil, err
	}
	if o.Broker == "" && newTarget(IO{}, "", LocalOptions{}).usesLocal(dc) {
		return kube.Spec{}, nil, badInputf("%s names no broker address, and pods cannot start a local cluster: give --broker as the pods reach the broker (with --host-network, the node's loopback: --broker 127.0.0.1:9092)", dc.Source)
	}
	files := map[string]string{}
	for key, p := range map[string]string{"workload.yaml": path, "driver.yaml": o.DriverFile} {
		if p == "" {
			continue
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return kube.Spec{}, nil, badInput(err)
		}
		files[key] = string(text)
	}
	args := o.RunArgs
	if o.Broker != "" {
		args = append(args, "--broker", o.Broker)
	}
	args = append(args, "--placement", string(placement))
	name := o.Name
	if name == "" {
		id := make([]byte, 4)
		_, _ = rand.Read(id)
		name = "bb-" + hex.EncodeToString(id)
	}
	policy := o.PullPolicy
	if policy != "Always" && policy != "IfNotPresent" && policy != "Never" {
		return kube.Spec{}, nil, badInputf("--pull-policy %q: use Always, IfNotPresent or Never", o.PullPolicy)
	}
	return kube.Spec{
		Name: name, Namespace: o.Namespace, Image: o.Image, PullPolicy: policy,
		Workers: o.Workers, HostNetwork: o.HostNetwork, Files: files, RunArgs: args, EnvFromSecret: o.EnvFromSecret,
		Deadline: w.Warmup + w.Duration + 15*time.Minute,
	}, w, nil
}

// kubeResultFiles are the coordinator's result files by name, with where
// each is written here given the --out and --omb-json paths ("" for not
// written).
func kubeResultFiles(out, ombOut string) []struct{ name, path string } {
	return []struct{ name, path string }{
		{"run.json", out}, {"omb.json", ombOut}, {"run.json" + results.JournalSuffix, out + results.JournalSuffix},
	}
}

// kubeLocalPaths is what the coordinator's output says instead of the
// paths in its pod of its result files: where each is copied here, or
// that it is not.
func kubeLocalPaths(out, ombOut string) map[string]string {
	local := map[string]string{}
	for _, f := range kubeResultFiles(out, ombOut) {
		local[f.name] = f.path
	}
	if ombOut == "" {
		local["omb.json"] = "not copied here (give --omb-json to copy them)"
	}
	return local
}

// CoordinatorFiles reads the result files a coordinator's run wrote in
// dir (run.json, omb.json, the journal), by name; those missing are left
// out.
func CoordinatorFiles(dir string) map[string][]byte {
	files := map[string][]byte{}
	for _, f := range kubeResultFiles(filepath.Join(dir, "run.json"), filepath.Join(dir, "omb.json")) {
		if data, err := os.ReadFile(f.path); err == nil {
			files[f.name] = data
		}
	}
	return files
}

// WriteKubeResults writes a coordinator's result files where asked and
// returns the paths it wrote.
func WriteKubeResults(files map[string][]byte, out, ombOut string) ([]string, error) {
	var written []string
	var errs []error
	for _, f := range kubeResultFiles(out, ombOut) {
		data, ok := files[f.name]
		if !ok || f.path == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(f.path, data, 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, f.path)
	}
	if len(written) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("the coordinator left no results"))
	}
	return written, errors.Join(errs...)
}

// recordKubeRun records the run whose results were copied to out, as a
// run here records its own, unless they are partial (an interrupted run).
func recordKubeRun(io IO, rc history.Recording, out string) {
	res, err := results.Read(out)
	switch {
	case err != nil:
		fmt.Fprintf(io.Err, "warning: not recorded in the history: %v\n", err)
	case !res.Partial:
		recordHistory(io.Err, rc, history.Stored{Run: res, Path: out})
	}
}
