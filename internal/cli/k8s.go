package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/brokerbench/brokerbench/internal/engine"
	"github.com/brokerbench/brokerbench/internal/kube"
	"github.com/brokerbench/brokerbench/internal/sysinfo"
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

// localContainerdSocket is the containerd socket of the one-node cluster
// hack/local-kubernetes.sh runs, with its default state directory.
const localContainerdSocket = "/tmp/brokerbench-k8s/containerd/containerd.sock"

func newK8sRunCmd(io IO) *cobra.Command {
	o, run := engine.DefaultKubeOptions(), engine.DefaultRunOptions()
	var hist historyFlags
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
		Args: oneArg("workload file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Overrides, o.RunArgs = overrides(cmd), nil
			for _, name := range append(overrideFlags, timingFlags...) {
				if f := cmd.Flags().Lookup(name); f.Changed {
					o.RunArgs = append(o.RunArgs, "--"+name, f.Value.String())
				}
			}
			var err error
			if o.History, err = hist.recording(); err != nil {
				return err
			}
			return engine.RunOnKubernetes(cmd.Context(), io, args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Workers, "workers", o.Workers, "number of worker pods (required)")
	fl.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "namespace to run in")
	fl.StringVar(&o.Image, "image", o.Image, "brokerbench image (make image)")
	fl.StringVar(&o.PullPolicy, "pull-policy", o.PullPolicy, "image pull policy: Always, IfNotPresent or Never")
	fl.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fl.StringVar(&o.Context, "context", o.Context, "kubeconfig context (default: the current one)")
	fl.BoolVar(&o.HostNetwork, "host-network", o.HostNetwork, "run the pods on the node's network (one node; reaches a broker on its loopback)")
	fl.StringVarP(&o.DriverFile, "driver", "d", o.DriverFile, "driver config file, put in the ConfigMap")
	fl.StringVar(&o.Broker, "broker", o.Broker, "broker address(es) as the pods reach them")
	fl.StringVar(&o.Placement, "placement", o.Placement, "spread or by-topic (see 'run --placement')")
	fl.StringVar(&o.EnvFromSecret, "env-from-secret", o.EnvFromSecret, "a Secret whose keys become environment variables in every pod, for ${env:NAME} in the driver config")
	fl.StringVarP(&o.Out, "out", "o", o.Out, "results JSON path (default results/<workload>-k8s-<name>.json)")
	fl.StringVar(&o.OMBJSON, "omb-json", o.OMBJSON, "also write OMB TestResult JSON to this path")
	fl.BoolVar(&o.DryRun, "dry-run", o.DryRun, "have the API server validate the objects; create nothing")
	fl.BoolVar(&o.Manifests, "manifests", o.Manifests, "print the objects as YAML and exit")
	fl.StringVar(&o.Name, "name", o.Name, "prefix of the objects' names (default: bb- and 8 random hex digits)")
	addOverrides(fl)
	addTiming(fl, &run)
	addHistoryFlags(fl, &hist)
	_ = cmd.MarkFlagRequired("workers")
	return cmd
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
				return engine.WithKind(engine.RunFailed, err)
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
				return engine.WithKind(engine.RunFailed, err)
			}
			written, err := engine.WriteKubeResults(files, out, ombOut)
			for _, p := range written {
				fmt.Fprintf(io.Out, "results: %s\n", p)
			}
			return engine.WithKind(engine.RunFailed, err)
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
				return engine.WithKind(engine.RunFailed, err)
			}
			defer os.RemoveAll(dir)
			out, omb := filepath.Join(dir, "run.json"), filepath.Join(dir, "omb.json")
			// Named first, so that 'k8s run' can say where the paths the
			// run prints are copied to.
			if err := kube.WriteResultsDir(io.Out, dir); err != nil {
				return engine.WithKind(engine.RunFailed, err)
			}
			code := Execute(cmd.Context(), append(args, "--out", out, "--omb-json", omb), io)
			if err := kube.WriteFiles(io.Out, engine.CoordinatorFiles(dir)); err != nil {
				return engine.WithKind(engine.RunFailed, err)
			}
			return &engine.ExitStatus{Code: code, Err: errSilent}
		},
	}
}

// errSilent carries an exit code whose reason was already printed.
var errSilent = errors.New("")
