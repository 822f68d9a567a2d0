package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/kube"
	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func newK8sCmd(io IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Run distributed workloads on Kubernetes",
		Long: `k8s runs one workload spread over worker pods on a Kubernetes cluster
(docs/distributed.md): an Indexed Job of workers behind a headless
Service, and the coordinator as a Job that runs the test and exits.`,
	}
	cmd.AddCommand(newK8sRunCmd(io), newK8sImageCmd(io), newK8sResultsCmd(io), newK8sCoordinatorCmd(io))
	return cmd
}

type k8sFlags struct {
	workers       int
	namespace     string
	image         string
	pullPolicy    string
	kubeconfig    string
	kubeContext   string
	hostNetwork   bool
	driverFile    string
	broker        string
	placement     string
	envFromSecret string
	out           string
	ombJSON       string
	dryRun        bool
	manifests     bool
	name          string
}

// localContainerdSocket is the containerd socket of the one-node cluster
// hack/local-kubernetes.sh runs, with its default state directory.
const localContainerdSocket = "/tmp/brokerbench-k8s/containerd/containerd.sock"

// passedThrough are the 'run' flags 'k8s run' hands to the coordinator as
// given.
var passedThrough = []string{"duration", "warmup", "rate", "messages", "max-send-lag", "drain-timeout", "interval"}

func newK8sRunCmd(io IO) *cobra.Command {
	var f k8sFlags
	cmd := &cobra.Command{
		Use:   "run WORKLOAD.yaml --workers N",
		Short: "Run a workload on worker pods and copy the results here",
		Long: `k8s run puts the workload (and --driver) in a ConfigMap, starts N worker
pods as an Indexed Job behind a headless Service and the coordinator as a
Job, follows them, copies the results out of the coordinator's log to
--out and --omb-json, and deletes everything it created, also on Ctrl-C
(the coordinator then writes its partial results first; a second Ctrl-C
stops waiting for them). It exits with the coordinator's exit code
('brokerbench run --help' lists them). The result paths the coordinator's
output names are the ones here that its files are copied to.

The image must hold this brokerbench build: 'make image' writes it as an
OCI tarball (bin/brokerbench-image.oci.tar, tagged brokerbench:VERSION) to
push to a registry or import into the nodes' containerd, at the address of
its socket: a node's own is /run/containerd/containerd.sock, that of the
one-node cluster hack/local-kubernetes.sh runs is ` + localContainerdSocket + `
(with its default K8S_DIR). The broker must
be reachable from the pods: give --broker (or bootstrap.servers), or
--host-network to reach a broker on the node's loopback (one node only;
worker i then serves on 127.1.i.1).

--dry-run has the API server validate every object (strict field
validation) and creates nothing; --manifests prints them as YAML instead,
for kubectl apply.`,
		Example: `  make image && ctr --address ` + localContainerdSocket + ` -n k8s.io images import bin/brokerbench-image.oci.tar
  brokerbench k8s run workloads/quick.yaml --workers 4 --broker kafka.kafka.svc:9092
  brokerbench k8s run workloads/quick.yaml --workers 2 --host-network --pull-policy Never --out results/k8s.json
  brokerbench k8s run workloads/quick.yaml --workers 16 --manifests > run.yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("k8s run takes exactly one workload file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return k8sRun(cmd, io, args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.workers, "workers", 0, "number of worker pods (required)")
	fl.StringVarP(&f.namespace, "namespace", "n", "default", "namespace to run in")
	fl.StringVar(&f.image, "image", "brokerbench:"+sysinfo.Version, "brokerbench image (make image)")
	fl.StringVar(&f.pullPolicy, "pull-policy", "IfNotPresent", "image pull policy: Always, IfNotPresent or Never")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fl.StringVar(&f.kubeContext, "context", "", "kubeconfig context (default: the current one)")
	fl.BoolVar(&f.hostNetwork, "host-network", false, "run the pods on the node's network (one node; reaches a broker on its loopback)")
	fl.StringVarP(&f.driverFile, "driver", "d", "", "driver config file, put in the ConfigMap")
	fl.StringVar(&f.broker, "broker", "", "broker address(es) as the pods reach them")
	fl.StringVar(&f.placement, "placement", string(distributed.Spread), "spread or by-topic (see 'run --placement')")
	fl.StringVar(&f.envFromSecret, "env-from-secret", "", "a Secret whose keys become environment variables in every pod, for ${env:NAME} in the driver config")
	fl.StringVarP(&f.out, "out", "o", "", "results JSON path (default results/<workload>-k8s-<name>.json)")
	fl.StringVar(&f.ombJSON, "omb-json", "", "also write OMB TestResult JSON to this path")
	fl.BoolVar(&f.dryRun, "dry-run", false, "have the API server validate the objects; create nothing")
	fl.BoolVar(&f.manifests, "manifests", false, "print the objects as YAML and exit")
	fl.StringVar(&f.name, "name", "", "prefix of the objects' names (default: bb- and 8 random hex digits)")
	fl.Duration("duration", 0, "override the measurement duration")
	fl.Duration("warmup", 0, "override the warmup duration")
	fl.Float64("rate", 0, "override the total producer rate in msg/s (0 = max rate)")
	fl.Int64("messages", 0, "stop producing after this many messages in total")
	fl.Duration("max-send-lag", 0, "as 'run --max-send-lag' (0: 10ms beyond the scheduling delay the run measures)")
	fl.Duration("drain-timeout", 30*time.Second, "as 'run --drain-timeout'")
	fl.Duration("interval", time.Second, "sampling interval")
	_ = cmd.MarkFlagRequired("workers")
	return cmd
}

func k8sRun(cmd *cobra.Command, io IO, path string, f *k8sFlags) error {
	spec, w, err := k8sSpec(cmd, path, f)
	if err != nil {
		return err
	}
	objs, err := kube.Build(spec)
	if err != nil {
		return usageError{err}
	}
	if f.manifests {
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
	out := f.out
	if out == "" {
		out = filepath.Join("results", fmt.Sprintf("%s-k8s-%s.json", results.FileName(w.Name), spec.Name))
	}
	if !f.dryRun {
		if err := checkOutputs(out, f.ombJSON); err != nil {
			return err
		}
	}
	cfg, err := kubeapi.Load(f.kubeconfig, f.kubeContext)
	if err != nil {
		return withCode(ExitInvalidInput, fmt.Errorf("no Kubernetes cluster to talk to: %w (give --kubeconfig, or set KUBECONFIG)", err))
	}
	sig := watchK8sInterrupts(cmd.Context(), io.Err)
	defer sig.release()
	fmt.Fprintf(io.Err, "run %s: %d workers in namespace %s, image %s\n", spec.Name, spec.Workers, spec.Namespace, spec.Image)
	outcome, runErr := kube.Run(sig.stop, cfg, objs, kube.Options{
		DryRun: f.dryRun, Log: io.Err, Abandon: sig.abandon.Done(), LocalPaths: k8sLocalPaths(out, f.ombJSON),
	})
	if f.dryRun {
		return withCode(ExitRunFailed, runErr)
	}
	paths, err := writeK8sResults(outcome.Files, out, f.ombJSON)
	written := "no results were copied"
	if len(paths) > 0 {
		written = "results: " + strings.Join(paths, ", ")
		fmt.Fprintf(io.Out, "copied out of the coordinator's log: %s\n", strings.Join(paths, ", "))
	}
	switch {
	case sig.stop.Err() != nil:
		return withCode(ExitInterrupted, fmt.Errorf("interrupted; %s", written))
	case runErr != nil:
		return withCode(ExitRunFailed, errors.Join(runErr, err))
	case err != nil:
		return withCode(ExitRunFailed, err)
	case outcome.ExitCode != 0:
		return withCode(outcome.ExitCode, fmt.Errorf("the coordinator exited %d (see its output above); %s", outcome.ExitCode, written))
	}
	return nil
}

// k8sSpec checks the workload and flags here, before anything is created,
// and describes the run's objects.
func k8sSpec(cmd *cobra.Command, path string, f *k8sFlags) (kube.Spec, *workload.Workload, error) {
	changed := cmd.Flags().Changed
	w, err := workload.Load(path)
	if err != nil {
		return kube.Spec{}, nil, err
	}
	if err := applyOverrides(w, cmd, changed); err != nil {
		return kube.Spec{}, nil, err
	}
	placement, err := distributed.ParsePlacement(f.placement)
	if err != nil {
		return kube.Spec{}, nil, usageError{fmt.Errorf("--placement: %w", err)}
	}
	if err := distributed.CheckWorkload(w); err != nil {
		return kube.Spec{}, nil, usageError{fmt.Errorf("%s: %w", path, err)}
	}
	if err := distributed.CheckSpread(w, f.workers, placement); err != nil {
		return kube.Spec{}, nil, usageError{fmt.Errorf("--workers %d: %w", f.workers, err)}
	}
	dc := w.Driver
	if f.driverFile != "" {
		if dc, err = workload.LoadDriver(f.driverFile); err != nil {
			return kube.Spec{}, nil, err
		}
	}
	if dc == nil {
		dc = defaultDriver()
	}
	if f.broker == "" && newTarget(IO{}, "", localFlags{}).usesLocal(dc) {
		return kube.Spec{}, nil, usageError{fmt.Errorf("%s names no broker address, and pods cannot start a local cluster: give --broker as the pods reach the broker (with --host-network, the node's loopback: --broker 127.0.0.1:9092)", dc.Source)}
	}
	files := map[string]string{}
	for key, p := range map[string]string{"workload.yaml": path, "driver.yaml": f.driverFile} {
		if p == "" {
			continue
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return kube.Spec{}, nil, usageError{err}
		}
		files[key] = string(text)
	}
	var args []string
	for _, name := range passedThrough {
		if changed(name) {
			args = append(args, "--"+name, cmd.Flags().Lookup(name).Value.String())
		}
	}
	if f.broker != "" {
		args = append(args, "--broker", f.broker)
	}
	args = append(args, "--placement", string(placement))
	name := f.name
	if name == "" {
		id := make([]byte, 4)
		_, _ = rand.Read(id)
		name = "bb-" + hex.EncodeToString(id)
	}
	policy := f.pullPolicy
	if policy != "Always" && policy != "IfNotPresent" && policy != "Never" {
		return kube.Spec{}, nil, usageError{fmt.Errorf("--pull-policy %q: use Always, IfNotPresent or Never", f.pullPolicy)}
	}
	return kube.Spec{
		Name: name, Namespace: f.namespace, Image: f.image, PullPolicy: policy,
		Workers: f.workers, HostNetwork: f.hostNetwork, Files: files, RunArgs: args, EnvFromSecret: f.envFromSecret,
		Deadline: w.Warmup + w.Duration + 15*time.Minute,
	}, w, nil
}

// k8sResultFiles are the coordinator's result files by name, with where
// each is written here given the --out and --omb-json paths ("" for not
// written).
func k8sResultFiles(out, ombOut string) []struct{ name, path string } {
	return []struct{ name, path string }{
		{"run.json", out}, {"omb.json", ombOut}, {"run.json" + results.JournalSuffix, out + results.JournalSuffix},
	}
}

// k8sLocalPaths is what the coordinator's output says instead of the
// paths in its pod of its result files: where each is copied here, or
// that it is not.
func k8sLocalPaths(out, ombOut string) map[string]string {
	local := map[string]string{}
	for _, f := range k8sResultFiles(out, ombOut) {
		local[f.name] = f.path
	}
	if ombOut == "" {
		local["omb.json"] = "not copied here (give --omb-json to copy them)"
	}
	return local
}

// writeK8sResults writes the coordinator's result files where asked and
// returns the paths it wrote.
func writeK8sResults(files map[string][]byte, out, ombOut string) ([]string, error) {
	var written []string
	var errs []error
	for _, f := range k8sResultFiles(out, ombOut) {
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

// watchK8sInterrupts turns SIGINT and SIGTERM into the steps of a run on
// Kubernetes: the first cancels stop (the coordinator's pod is stopped
// with a grace period in which it writes its partial results, which are
// copied here), the second cancels abandon (the wait for those results
// ends; the run's objects are still deleted), and a third is no longer
// caught: it ends the process at once.
func watchK8sInterrupts(parent context.Context, w io.Writer) *interrupts {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return k8sInterrupts(parent, w, sigs, func() { signal.Stop(sigs) })
}

// k8sInterrupts is watchK8sInterrupts on the signals sigs delivers;
// unhook stops their delivery (it may be called twice).
func k8sInterrupts(parent context.Context, w io.Writer, sigs <-chan os.Signal, unhook func()) *interrupts {
	stop, cancelStop := context.WithCancelCause(parent)
	abandon, cancelAbandon := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(w, "\n%s: stopping the run on Kubernetes; interrupt again to stop waiting for the coordinator's partial results (the run's objects are deleted either way)\n", s)
			cancelStop(fmt.Errorf("%s", s))
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			unhook()
			fmt.Fprintf(w, "\n%s again: no longer waiting for the partial results; deleting the run's objects (interrupt once more to exit at once, leaving them)\n", s)
			cancelAbandon(fmt.Errorf("%s twice", s))
		case <-done:
		}
	}()
	return &interrupts{stop: stop, abandon: abandon, release: func() {
		unhook()
		close(done)
		cancelStop(nil)
		cancelAbandon(nil)
	}}
}

func newK8sImageCmd(io IO) *cobra.Command {
	var out, tag, binary string
	cmd := &cobra.Command{
		Use:   "image --out FILE",
		Short: "Write brokerbench's container image as an OCI tarball",
		Long: `image writes a container image of this brokerbench binary (static, on an
empty base, as a non-root user) as an OCI image layout in a tar file,
without Docker. Import it into a node's containerd with
'ctr --address SOCKET -n k8s.io images import FILE' (SOCKET: a node's
/run/containerd/containerd.sock, or ` + localContainerdSocket + `
on hack/local-kubernetes.sh's cluster), or push it with crane or skopeo.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				binary = exe
			}
			if err := kube.BuildImage(kube.ImageSpec{Binary: binary, Tag: tag, CABundle: "/etc/ssl/certs/ca-certificates.crt"}, out); err != nil {
				return withCode(ExitRunFailed, err)
			}
			fmt.Fprintf(io.Out, "image %s: %s\n", tag, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "the OCI tarball to write (required)")
	cmd.Flags().StringVar(&tag, "tag", "brokerbench:"+sysinfo.Version, "the image's name")
	cmd.Flags().StringVar(&binary, "binary", "", "the static brokerbench binary to put in it (default: this one)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newK8sResultsCmd(io IO) *cobra.Command {
	var out, ombOut string
	cmd := &cobra.Command{
		Use:   "results [LOG] --out FILE",
		Short: "Copy the results out of a coordinator's log (for manifests applied by hand)",
		Long: `results reads a coordinator pod's log (the file LOG, or standard input) and
writes the results files it carries: what 'k8s run' does itself, for runs
started with 'kubectl apply' or the Helm chart in deploy/kubernetes/.`,
		Example: `  kubectl logs job/brokerbench-quick-coordinator | brokerbench k8s results --out results/run.json`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			if len(args) == 1 {
				f, err := os.Open(args[0])
				if err != nil {
					return usageError{err}
				}
				defer f.Close()
				in = f
			}
			files, err := kube.ReadFiles(in, nil)
			if len(files) == 0 && err == nil {
				err = errors.New("the log carries no results: the coordinator has not finished, or this is not its log")
			}
			if err != nil {
				return withCode(ExitRunFailed, err)
			}
			written, err := writeK8sResults(files, out, ombOut)
			for _, p := range written {
				fmt.Fprintf(io.Out, "results: %s\n", p)
			}
			return withCode(ExitRunFailed, err)
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "results JSON path (required)")
	cmd.Flags().StringVar(&ombOut, "omb-json", "", "also write the OMB TestResult JSON to this path")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// newK8sCoordinatorCmd is what the coordinator's pod runs: 'brokerbench
// run' with its result files written to its log afterwards, where 'k8s
// run' reads them.
func newK8sCoordinatorCmd(io IO) *cobra.Command {
	return &cobra.Command{
		Use:                "coordinator -- run ARGS...",
		Short:              "Run 'brokerbench run' and write its result files to the output (the coordinator pod's command)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) == 0 || args[0] != "run" {
				return usageError{errors.New("k8s coordinator runs 'run ARGS...'")}
			}
			dir, err := os.MkdirTemp("", "brokerbench-results-")
			if err != nil {
				return withCode(ExitRunFailed, err)
			}
			defer os.RemoveAll(dir)
			out, omb := filepath.Join(dir, "run.json"), filepath.Join(dir, "omb.json")
			// Named first, so that 'k8s run' can say where the paths the
			// run prints are copied to.
			if err := kube.WriteResultsDir(io.Out, dir); err != nil {
				return withCode(ExitRunFailed, err)
			}
			code := Execute(cmd.Context(), append(args, "--out", out, "--omb-json", omb), io)
			files := map[string][]byte{}
			for name, p := range map[string]string{"run.json": out, "omb.json": omb, "run.json" + results.JournalSuffix: out + results.JournalSuffix} {
				if data, err := os.ReadFile(p); err == nil {
					files[name] = data
				}
			}
			if err := kube.WriteFiles(io.Out, files); err != nil {
				return withCode(ExitRunFailed, err)
			}
			return withCode(code, errSilent)
		},
	}
}

// errSilent carries an exit code whose reason was already printed.
var errSilent = errors.New("")
