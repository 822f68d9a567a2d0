package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/brokerbench/brokerbench/internal/brokers/memory"
	"github.com/brokerbench/brokerbench/internal/results"
	"github.com/brokerbench/brokerbench/internal/study"
)

// memoryWorkload is a minute at 2,000 msg/s on the memory driver: long
// enough to be interrupted in its measurement.
const memoryWorkload = `name: long
topics: 1
partitionsPerTopic: 2
messageSize: 100
producersPerTopic: 1
subscriptionsPerTopic: 1
rate: 2000
warmup: 1s
duration: 60s
`

// TestInterruptRunAndStudyAlike: run and study make their runs through one
// sequence, so an interrupt stops both the same way: the producers stop,
// the drain is brief, the run's results are written partial, and the
// command exits 4. Both run on the memory driver: no broker process.
func TestInterruptRunAndStudyAlike(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BROKERBENCH_STATE", filepath.Join(dir, "state"))
	wl := filepath.Join(dir, "long.yaml")
	if err := os.WriteFile(wl, []byte(memoryWorkload+"driver:\n  driver: memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "study.yaml")
	studyText := "name: long-study\niterations: 1\nworkloads: [long.yaml]\nsetups:\n  - name: memory\n    driver:\n      driver: memory\n"
	if err := os.WriteFile(st, []byte(studyText), 0o644); err != nil {
		t.Fatal(err)
	}
	runOut, studyOut := filepath.Join(dir, "run.json"), filepath.Join(dir, "study")
	runOptions, studyOptions := DefaultRunOptions(), DefaultStudyOptions()
	runOptions.Out = runOut
	studyOptions.Out, studyOptions.Progress = studyOut, true
	for _, tc := range []struct {
		name string
		make func(IO) error
		// started is what stderr says once the run is under way.
		started string
		// partial reads the interrupted run's results.
		partial func(t *testing.T) *results.Run
	}{
		{"run", func(io IO) error { return Run(context.Background(), io, wl, runOptions) }, "measure", func(t *testing.T) *results.Run {
			res, err := results.Read(runOut)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}},
		{"study", func(io IO) error { return Study(context.Background(), io, st, studyOptions) }, "measure", func(t *testing.T) *results.Run {
			idx, err := study.ReadIndex(studyOut)
			if err != nil {
				t.Fatal(err)
			}
			if len(idx.Runs) != 1 || idx.Runs[0].Status != study.Partial {
				t.Fatalf("study index %+v: want its one run partial", idx.Runs)
			}
			res, err := results.Read(filepath.Join(studyOut, idx.Runs[0].File))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr lockedBuffer
			done := make(chan error, 1)
			go func() { done <- tc.make(IO{Out: &stdout, Err: &stderr}) }()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(stderr.String(), tc.started) {
				if time.Now().After(deadline) {
					t.Fatalf("not under way after 30 s:\n%s", stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("still running 30 s after the interrupt:\n%s", stderr.String())
			}
			if KindOf(err) != Interrupted {
				t.Errorf("%v (kind %d), want interrupted\n%s\n%s", err, KindOf(err), stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), "stopping the producers and draining briefly; interrupt again to abandon") {
				t.Errorf("the interrupt was not the two-stage one:\n%s", stderr.String())
			}
			res := tc.partial(t)
			c := res.Counts
			if !res.Partial || !strings.HasPrefix(res.PartialReason, "interrupted") || c.Sent == 0 || c.Acked != c.Sent || c.Lost != 0 {
				t.Errorf("results: partial %v (%q), counts %+v", res.Partial, res.PartialReason, c)
			}
			if res.Measured.DurationSeconds >= 30 {
				t.Errorf("measured %.1f s of a 60 s run interrupted about 2 s in", res.Measured.DurationSeconds)
			}
		})
	}
}
