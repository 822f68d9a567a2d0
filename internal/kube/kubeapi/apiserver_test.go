package kubeapi_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
	"github.com/brokerbench/brokerbench/internal/kube/kubetest"
)

// TestAgainstAPIServer: a real kube-apiserver, reached through a
// kubeconfig file as a user reaches theirs, stores what Create sends and
// returns it to Get and List; it refuses, with strict field validation, a
// field it does not know and says which; and a missing object is
// NotFound.
func TestAgainstAPIServer(t *testing.T) {
	srv := kubetest.Start(t, 29827, 29847)
	cfg, err := kubeapi.Load(srv.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cm := &kubeapi.ConfigMap{
		TypeMeta:   kubeapi.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: kubeapi.ObjectMeta{Name: "files", Namespace: "default", Labels: map[string]string{"brokerbench.io/run": "t"}},
		Data:       map[string]string{"workload.yaml": "name: x\n"},
	}
	if err := c.Create(ctx, kubeapi.ConfigMaps, "default", cm, true); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	var got kubeapi.ConfigMap
	if err := c.Get(ctx, kubeapi.ConfigMaps, "default", "files", &got); !kubeapi.IsNotFound(err) {
		t.Errorf("after a dry run: %v, want NotFound", err)
	}
	if err := c.Create(ctx, kubeapi.ConfigMaps, "default", cm, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, kubeapi.ConfigMaps, "default", "files", &got); err != nil || got.Data["workload.yaml"] != "name: x\n" {
		t.Errorf("get: %+v, %v", got, err)
	}
	var list kubeapi.List[kubeapi.ConfigMap]
	if err := c.List(ctx, kubeapi.ConfigMaps, "default", "brokerbench.io/run=t", &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "files" {
		t.Errorf("list: %+v, %v", list, err)
	}
	if err := c.Create(ctx, kubeapi.ConfigMaps, "default", cm, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second create: %v", err)
	}
	misspelt := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "bad"}, "dta": map[string]string{"a": "b"}}
	if err := c.Create(ctx, kubeapi.ConfigMaps, "default", misspelt, true); err == nil || !strings.Contains(err.Error(), `unknown field "dta"`) {
		t.Errorf("an unknown field: %v", err)
	}
	if err := c.Delete(ctx, kubeapi.ConfigMaps, "default", "files", kubeapi.DeleteOptions{PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, kubeapi.ConfigMaps, "default", "files", kubeapi.DeleteOptions{}); !kubeapi.IsNotFound(err) {
		t.Errorf("a second delete: %v, want NotFound", err)
	}

	// The log of a pod that no node runs is empty, and the API server
	// accepts what a log is asked for with (a log is text, not JSON).
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "brokerbench:test"}}}}
	// No controller makes the namespace's service account here.
	sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}
	if err := c.Create(ctx, kubeapi.Resource{Prefix: "api/v1", Plural: "serviceaccounts"}, "default", sa, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, kubeapi.Pods, "default", pod, false); err != nil {
		t.Fatal(err)
	}
	r, err := c.Logs(ctx, "default", "p", true)
	if err != nil {
		t.Fatalf("the log of a pod not scheduled: %v", err)
	}
	if text, err := io.ReadAll(r); err != nil || len(text) != 0 {
		t.Errorf("the log of a pod not scheduled: %q, %v", text, err)
	}
	r.Close()

	bad := *cfg
	bad.BearerToken = "not-the-token"
	if c, err = kubeapi.New(&bad); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, kubeapi.Pods, "default", "", &kubeapi.List[kubeapi.Pod]{}); err == nil || !strings.Contains(err.Error(), "refused the credentials of kubeconfig "+srv.Kubeconfig) {
		t.Errorf("a wrong token: %v", err)
	}
}
