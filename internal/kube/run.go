package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
)

// Options are how Run behaves.
type Options struct {
	// DryRun has the API server validate every object (strict field
	// validation, dry run) and create nothing.
	DryRun bool
	// Log receives progress lines and the coordinator's output.
	Log io.Writer
	// StopGrace is how long the coordinator may take to write its partial
	// results once the run is interrupted (default 45 s).
	StopGrace time.Duration
	// StartTimeout bounds how long the pods may take to start (default 5
	// minutes).
	StartTimeout time.Duration
	// Abandon, once closed after the run's context has ended, ends the
	// wait for the coordinator's partial results: Run then deletes the
	// objects and returns what it has (nil: wait the whole grace).
	Abandon <-chan struct{}
	// LocalPaths are what the coordinator's output says instead of the
	// paths in its pod of its result files, by file name ("run.json"):
	// where they are copied here (see ReadFilesAs).
	LocalPaths map[string]string
}

// Outcome is what the coordinator left.
type Outcome struct {
	// Files are the result files it wrote, by name.
	Files map[string][]byte
	// ExitCode is its 'brokerbench run' exit code.
	ExitCode int
}

// Run creates the objects, follows the run until the coordinator has
// ended, and deletes what it created, also when ctx ends: the
// coordinator is then stopped, and its partial results are still copied
// out. With DryRun the API server validates the objects and nothing is
// created.
func Run(ctx context.Context, cfg *kubeapi.Config, o *Objects, opts Options) (Outcome, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = 45 * time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	c, err := kubeapi.New(cfg)
	if err != nil {
		return Outcome{}, err
	}
	cleanup, err := create(ctx, c, o, opts)
	defer cleanup()
	if err != nil || opts.DryRun {
		return Outcome{}, err
	}
	return follow(ctx, c, o, opts)
}

// create creates the objects in order; the returned function deletes
// those created (dry-run objects are not).
func create(ctx context.Context, c *kubeapi.Client, o *Objects, opts Options) (func(), error) {
	ns := o.ConfigMap.Namespace
	var undo []func(context.Context) error
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := len(undo) - 1; i >= 0; i-- {
			if err := undo[i](ctx); err != nil && !kubeapi.IsNotFound(err) {
				fmt.Fprintf(opts.Log, "warning: delete: %v\n", err)
			}
		}
	}
	// A Job's pods are deleted after it.
	del := kubeapi.DeleteOptions{PropagationPolicy: "Background"}
	steps := []struct {
		what     string
		resource kubeapi.Resource
		name     string
		obj      any
	}{
		{"ConfigMap", kubeapi.ConfigMaps, o.ConfigMap.Name, o.ConfigMap},
		{"Service", kubeapi.Services, o.Service.Name, o.Service},
		{"Job", kubeapi.Jobs, o.Workers.Name, o.Workers},
		{"Job", kubeapi.Jobs, o.Coordinator.Name, o.Coordinator},
	}
	for _, s := range steps {
		if err := c.Create(ctx, s.resource, ns, s.obj, opts.DryRun); err != nil {
			return cleanup, fmt.Errorf("create %s %s in namespace %s: %w", s.what, s.name, ns, err)
		}
		verb := "created"
		if opts.DryRun {
			verb = "validated by the API server (dry run)"
		} else {
			undo = append(undo, func(ctx context.Context) error { return c.Delete(ctx, s.resource, ns, s.name, del) })
		}
		fmt.Fprintf(opts.Log, "%s %s: %s\n", s.what, s.name, verb)
	}
	return cleanup, nil
}

// fatalWaiting are container waiting reasons a run cannot get past.
var fatalWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true,
}

// follow waits for the coordinator's pod, streams its log until it ends,
// and reads its exit code; on ctx's end it stops the coordinator and
// still collects what it wrote.
func follow(ctx context.Context, c *kubeapi.Client, o *Objects, opts Options) (Outcome, error) {
	ns := o.ConfigMap.Namespace
	run := o.ConfigMap.Labels[LabelRun]
	pod, err := awaitCoordinator(ctx, c, ns, run, opts)
	if err != nil {
		return Outcome{}, err
	}
	// The log is read on a context of its own: an interrupt stops the
	// coordinator, which then writes its partial results to the log.
	logCtx, cancelLog := context.WithCancel(context.Background())
	defer cancelLog()
	type read struct {
		files map[string][]byte
		err   error
	}
	done := make(chan read, 1)
	go func() {
		stream, err := c.Logs(logCtx, ns, pod, true)
		if err != nil {
			done <- read{err: fmt.Errorf("read the coordinator's log: %w%s", err, logHint(err))}
			return
		}
		defer stream.Close()
		files, err := ReadFilesAs(stream, opts.Log, opts.LocalPaths)
		done <- read{files, err}
	}()
	var got read
	select {
	case got = <-done:
	case <-ctx.Done():
		fmt.Fprintf(opts.Log, "interrupted: stopping the coordinator (up to %s for its partial results)\n", opts.StopGrace)
		grace := int64(opts.StopGrace.Seconds())
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = c.Delete(dctx, kubeapi.Pods, ns, pod, kubeapi.DeleteOptions{GracePeriodSeconds: &grace})
		cancel()
		select {
		case got = <-done:
		case <-opts.Abandon:
			cancelLog()
			got = <-done
			got.err = errors.New("stopped waiting for the coordinator's partial results")
		case <-time.After(opts.StopGrace + 10*time.Second):
			cancelLog()
			got = <-done
		}
		return Outcome{Files: got.files, ExitCode: -1}, errors.Join(context.Cause(ctx), got.err)
	}
	code, err := exitCode(c, ns, pod)
	return Outcome{Files: got.files, ExitCode: code}, errors.Join(got.err, err)
}

// logHint says why the API server may fail to read a pod's log, for the
// errors that do not say it themselves.
func logHint(err error) string {
	if strings.Contains(err.Error(), "no preferred addresses found") {
		return " (the API server reads a pod's log through its node's kubelet, and the node reports no address of the types it is told to prefer, --kubelet-preferred-address-types: see the node's addresses with 'kubectl get nodes -o wide', and the kubelet's log for why it found none)"
	}
	return ""
}

// awaitCoordinator waits until the coordinator's pod has started (or
// ended), reporting every pod's phase changes, and fails early on pods
// that cannot start.
func awaitCoordinator(ctx context.Context, c *kubeapi.Client, ns, run string, opts Options) (string, error) {
	deadline := time.Now().Add(opts.StartTimeout)
	seen := map[string]string{}
	for {
		var pods kubeapi.List[kubeapi.Pod]
		if err := c.List(ctx, kubeapi.Pods, ns, LabelRun+"="+run, &pods); err != nil {
			return "", fmt.Errorf("list the run's pods: %w", err)
		}
		sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
		coordinator := ""
		for _, p := range pods.Items {
			state := podState(&p)
			if seen[p.Name] != state {
				seen[p.Name] = state
				fmt.Fprintf(opts.Log, "pod %s: %s\n", p.Name, state)
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
					return "", fmt.Errorf("pod %s cannot start: %s: %s (is the image %s on every node? 'make image' builds it)", p.Name, w.Reason, w.Message, cs.Image)
				}
			}
			if p.Labels[LabelRole] == "coordinator" && (p.Status.Phase == kubeapi.PodRunning || p.Status.Phase == kubeapi.PodSucceeded || p.Status.Phase == kubeapi.PodFailed) {
				coordinator = p.Name
			}
		}
		if coordinator != "" {
			return coordinator, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the coordinator's pod did not start within %s", opts.StartTimeout)
		}
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-time.After(time.Second):
		}
	}
}

// podState describes a pod's phase and its container's state in a few
// words.
func podState(p *kubeapi.Pod) string {
	parts := []string{p.Status.Phase}
	for _, c := range p.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Reason != "" {
			parts = append(parts, strings.ToLower(c.Reason)+": "+c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			parts = append(parts, "waiting: "+cs.State.Waiting.Reason)
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("exited %d", cs.State.Terminated.ExitCode))
		}
	}
	return strings.Join(parts, ", ")
}

// exitCode waits briefly for the pod's container to be reported
// terminated and returns its exit code.
func exitCode(c *kubeapi.Client, ns, pod string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var p kubeapi.Pod
		if err := c.Get(ctx, kubeapi.Pods, ns, pod, &p); err != nil {
			return -1, fmt.Errorf("read the coordinator's exit code: %w", err)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				return int(t.ExitCode), nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, errors.New("the coordinator's log ended but its container is not reported terminated")
		case <-time.After(500 * time.Millisecond):
		}
	}
}
