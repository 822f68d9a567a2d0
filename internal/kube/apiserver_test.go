package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
	"github.com/brokerbench/brokerbench/internal/kube/kubetest"
)

func testSpec(hostNetwork bool) Spec {
	return Spec{
		Name: "bb-test", Namespace: "default", Image: "brokerbench:test", Workers: 3, HostNetwork: hostNetwork,
		Files:   map[string]string{"workload.yaml": "name: x\n", "driver.yaml": "driver: kafka\n"},
		RunArgs: []string{"--broker", "kafka:9092", "--placement", "spread"}, EnvFromSecret: "broker-credentials",
		Deadline: time.Hour,
	}
}

// TestObjectsAgainstAPIServer has a real kube-apiserver validate a run's
// objects, strictly, in both network modes; refuse a bad one; and then
// create them for real and delete them all when the run ends (here: its
// coordinator never starts, as no controller runs).
func TestObjectsAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t, 29823, 29843)
	for _, hostNetwork := range []bool{false, true} {
		o, err := Build(testSpec(hostNetwork))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), srv.Config, o, Options{DryRun: true}); err != nil {
			t.Errorf("host network %v: %v", hostNetwork, err)
		}
	}
	bad := testSpec(false)
	bad.PullPolicy = "Sometimes"
	o, err := Build(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), srv.Config, o, Options{DryRun: true}); err == nil || !strings.Contains(err.Error(), "imagePullPolicy") {
		t.Errorf("a bad pull policy: %v", err)
	}

	o, err = Build(testSpec(false))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	_, err = Run(context.Background(), srv.Config, o, Options{StartTimeout: 2 * time.Second, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Errorf("run without controllers: %v", err)
	}
	for _, what := range []string{"ConfigMap bb-test-config: created", "Job bb-test-workers: created", "Job bb-test-coordinator: created"} {
		if !strings.Contains(log.String(), what) {
			t.Errorf("log lacks %q:\n%s", what, log.String())
		}
	}
	c, err := kubeapi.New(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	sel := LabelRun + "=bb-test"
	ctx := context.Background()
	var jobs kubeapi.List[kubeapi.Job]
	if err := c.List(ctx, kubeapi.Jobs, "default", sel, &jobs); err != nil {
		t.Fatal(err)
	}
	var cms kubeapi.List[kubeapi.ConfigMap]
	var svcs kubeapi.List[kubeapi.Service]
	if err := errors.Join(c.List(ctx, kubeapi.ConfigMaps, "default", sel, &cms), c.List(ctx, kubeapi.Services, "default", sel, &svcs)); err != nil {
		t.Fatal(err)
	}
	// Jobs are deleted in the background: gone, or marked for deletion.
	for _, j := range jobs.Items {
		if j.DeletionTimestamp == "" {
			t.Errorf("job %s left behind", j.Name)
		}
	}
	if len(cms.Items)+len(svcs.Items) > 0 {
		t.Errorf("left behind: %d ConfigMaps, %d Services", len(cms.Items), len(svcs.Items))
	}
}

// TestWorkerURLs: pod network workers are reached through the headless
// Service's DNS names, host network workers on their own loopback
// addresses, which their listen argument matches.
func TestWorkerURLs(t *testing.T) {
	pod, host := testSpec(false), testSpec(true)
	if got := pod.WorkerURLs()[2]; got != "http://bb-test-workers-2.bb-test-workers.default.svc:7070" {
		t.Errorf("pod network URL %s", got)
	}
	if got := host.WorkerURLs()[2]; got != "http://127.1.2.1:7070" {
		t.Errorf("host network URL %s", got)
	}
	o, err := Build(host)
	if err != nil {
		t.Fatal(err)
	}
	args := o.Workers.Spec.Template.Spec.Containers[0].Args
	if strings.Join(args, " ") != "worker --listen 127.1.$(JOB_COMPLETION_INDEX).1:7070 --once" || !o.Workers.Spec.Template.Spec.HostNetwork {
		t.Errorf("host network worker args %v", args)
	}
	if o.ConfigMap.Data["workers"] != strings.Join(host.WorkerURLs(), "\n")+"\n" {
		t.Errorf("workers file %q", o.ConfigMap.Data["workers"])
	}
	if o.Workers.Spec.Template.Spec.Containers[0].ImagePullPolicy != "IfNotPresent" {
		t.Errorf("default pull policy %v", o.Workers.Spec.Template.Spec.Containers[0].ImagePullPolicy)
	}
}
