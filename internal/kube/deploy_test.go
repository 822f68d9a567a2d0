package kube

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
	"github.com/brokerbench/brokerbench/internal/kube/kubetest"
)

// decodeObjects reads a run's four objects from YAML documents, strictly:
// a field that brokerbench's objects do not model fails the test, so that
// the API server then validates all of what the documents say.
func decodeObjects(t *testing.T, docs []string) *Objects {
	t.Helper()
	o := &Objects{}
	for _, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		var dst any
		switch {
		case head.Kind == "ConfigMap":
			o.ConfigMap = &kubeapi.ConfigMap{}
			dst = o.ConfigMap
		case head.Kind == "Service":
			o.Service = &kubeapi.Service{}
			dst = o.Service
		case head.Kind == "Job" && strings.HasSuffix(head.Metadata.Name, "-workers"):
			o.Workers = &kubeapi.Job{}
			dst = o.Workers
		case head.Kind == "Job" && strings.HasSuffix(head.Metadata.Name, "-coordinator"):
			o.Coordinator = &kubeapi.Job{}
			dst = o.Coordinator
		default:
			t.Fatalf("unexpected object %s %s", head.Kind, head.Metadata.Name)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), dst); err != nil {
			t.Fatalf("%s %s: %v", head.Kind, head.Metadata.Name, err)
		}
	}
	if o.ConfigMap == nil || o.Service == nil || o.Workers == nil || o.Coordinator == nil {
		t.Fatalf("not a whole run: %+v", o)
	}
	return o
}

// renderChart renders the Helm chart in deploy/kubernetes/helm with
// values, as 'helm template' would (Helm's own engine).
func renderChart(t *testing.T, release string, values map[string]any) []string {
	t.Helper()
	chart, err := loader.Load("../../deploy/kubernetes/helm/brokerbench")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(chart, values, chartutil.ReleaseOptions{Name: release, Namespace: "default", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(chart, vals)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for name, text := range out {
		if strings.HasSuffix(name, ".yaml") {
			docs = append(docs, text)
		}
	}
	return docs
}

// TestDeployFilesAgainstAPIServer has a real kube-apiserver validate,
// strictly, the plain manifests in deploy/kubernetes/ and what the Helm
// chart renders in both network modes; the chart's objects must also run
// what 'k8s run' would.
func TestDeployFilesAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t, 29825, 29845)
	plain, err := os.ReadFile("../../deploy/kubernetes/quick-run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), srv.Config, decodeObjects(t, strings.Split(string(plain), "\n---\n")), Options{DryRun: true}); err != nil {
		t.Errorf("deploy/kubernetes/quick-run.yaml: %v", err)
	}
	for _, hostNetwork := range []bool{false, true} {
		docs := renderChart(t, "bbchart", map[string]any{
			"workers": 3, "hostNetwork": hostNetwork, "broker": "kafka:9092", "driver": "driver: kafka\n",
			"runArgs": []any{"--duration", "30s"}, "envFromSecret": "creds",
		})
		o := decodeObjects(t, docs)
		if _, err := Run(context.Background(), srv.Config, o, Options{DryRun: true}); err != nil {
			t.Errorf("chart, host network %v: %v", hostNetwork, err)
		}
		// The chart runs what 'k8s run' runs.
		want, err := Build(Spec{Name: "bbchart", Namespace: "default", Image: "brokerbench:latest", Workers: 3, HostNetwork: hostNetwork,
			Files: map[string]string{"workload.yaml": "", "driver.yaml": ""}, RunArgs: []string{"--duration", "30s", "--broker", "kafka:9092", "--placement", "spread"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range []struct{ got, want *kubeapi.Job }{{o.Workers, want.Workers}, {o.Coordinator, want.Coordinator}} {
			g, w := pair.got.Spec.Template.Spec.Containers[0], pair.want.Spec.Template.Spec.Containers[0]
			if fmt.Sprint(g.Args) != fmt.Sprint(w.Args) {
				t.Errorf("%s args:\nchart     %v\nk8s run   %v", pair.got.Name, g.Args, w.Args)
			}
		}
		if fmt.Sprint(o.Workers.Spec.Template.Spec.Containers[0].Ports) != fmt.Sprint(want.Workers.Spec.Template.Spec.Containers[0].Ports) {
			t.Errorf("worker ports:\nchart   %v\nk8s run %v", o.Workers.Spec.Template.Spec.Containers[0].Ports, want.Workers.Spec.Template.Spec.Containers[0].Ports)
		}
		if fmt.Sprint(o.Workers.Spec.Template.Spec.Tolerations) != fmt.Sprint(want.Workers.Spec.Template.Spec.Tolerations) {
			t.Errorf("tolerations:\nchart   %v\nk8s run %v", o.Workers.Spec.Template.Spec.Tolerations, want.Workers.Spec.Template.Spec.Tolerations)
		}
		if o.ConfigMap.Data["workers"] != want.ConfigMap.Data["workers"] || *o.Workers.Spec.Completions != 3 {
			t.Errorf("workers file:\nchart   %q\nk8s run %q", o.ConfigMap.Data["workers"], want.ConfigMap.Data["workers"])
		}
	}
}
