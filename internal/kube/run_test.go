package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/kube/kubeapi"
)

// fakeAPIServer answers what Run asks of an API server, for a run whose
// coordinator is running: creates and deletes succeed, the pod list holds
// the coordinator's pod, and its log holds log and then stays open until
// the request ends. It records the deletes.
type fakeAPIServer struct {
	log     string
	mu      sync.Mutex
	deleted []string
}

func (f *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	case r.Method == http.MethodDelete:
		f.mu.Lock()
		f.deleted = append(f.deleted, r.URL.Path)
		f.mu.Unlock()
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	case strings.HasSuffix(r.URL.Path, "/log"):
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, f.log)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case strings.HasSuffix(r.URL.Path, "/pods"):
		pod := kubeapi.Pod{
			ObjectMeta: kubeapi.ObjectMeta{Name: "bb-test-coordinator-x", Namespace: "default", Labels: map[string]string{LabelRole: "coordinator"}},
			Status:     kubeapi.PodStatus{Phase: kubeapi.PodRunning},
		}
		_ = json.NewEncoder(w).Encode(kubeapi.List[kubeapi.Pod]{TypeMeta: kubeapi.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []kubeapi.Pod{pod}})
	default:
		http.NotFound(w, r)
	}
}

// TestRunInterruptedTwice: interrupted, Run stops the coordinator and
// waits for its partial results; abandoned then, it stops waiting at once
// and still deletes every object it created. The coordinator's output
// reaches the log with the local paths of its result files.
func TestRunInterruptedTwice(t *testing.T) {
	api := &fakeAPIServer{log: dirLine + "/tmp/brokerbench-results-7\nmeasuring\nresults: /tmp/brokerbench-results-7/run.json\n"}
	srv := httptest.NewServer(api)
	defer srv.Close()
	o, err := Build(testSpec(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, interrupt := context.WithCancel(context.Background())
	abandon := make(chan struct{})
	var log lockedLog
	type result struct {
		out Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg := &kubeapi.Config{Host: srv.URL}
		out, err := Run(ctx, cfg, o, Options{
			Log: &log, Abandon: abandon, StopGrace: time.Minute,
			LocalPaths: map[string]string{"run.json": "results/here.json"},
		})
		done <- result{out, err}
	}()
	waitFor := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), what); {
			select {
			case r := <-done:
				t.Fatalf("Run returned (%v) before the log said %q:\n%s", r.err, what, log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the log never said %q:\n%s", what, log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("results: results/here.json\n")
	interrupt()
	waitFor("interrupted: stopping the coordinator")
	select {
	case r := <-done:
		t.Fatalf("Run returned before the grace ended or the wait was abandoned: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	start := time.Now()
	close(abandon)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still waits 10 s after the wait was abandoned:\n%s", log.String())
	}
	if took := time.Since(start); took > 5*time.Second || r.err == nil || !strings.Contains(r.err.Error(), "stopped waiting for the coordinator's partial results") || r.out.ExitCode != -1 {
		t.Errorf("after %s: exit %d, %v", took, r.out.ExitCode, r.err)
	}
	if strings.Contains(log.String(), "/tmp/brokerbench-results-7") || strings.Contains(log.String(), dirLine) {
		t.Errorf("the log names the pod's directory:\n%s", log.String())
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	deleted := strings.Join(api.deleted, "\n")
	for _, what := range []string{"pods/bb-test-coordinator-x", "configmaps/bb-test-config", "services/bb-test-workers", "jobs/bb-test-workers", "jobs/bb-test-coordinator"} {
		if !strings.Contains(deleted, what) {
			t.Errorf("not deleted: %s (deleted: %v)", what, api.deleted)
		}
	}
}

// lockedLog is a strings.Builder safe for a writer and a reader at once.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
