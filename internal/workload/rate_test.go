package workload

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brokerbench/brokerbench/internal/pacer"
)

// TestRateProfiles: each shape reads into its schedule.
func TestRateProfiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rates.csv"), []byte("seconds,rate\n0,100\n10,200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src string
		i         uint64
		want      time.Duration // the profile's Due(i)
	}{
		// 0 -> 100 msg/s over 10 s: 5 sends by 1 s.
		{"ramp", "ramp: {from: 0, to: 100, over: 10s}", 5, time.Second},
		// 10 msg/s for 2 s, then 100 msg/s.
		{"steps", "steps:\n    - {rate: 10, for: 2s}\n    - {rate: 100}", 30, 2100 * time.Millisecond},
		// Whole periods of a sine are exact: 1000 sends in 10 s.
		{"sine", "sine: {mean: 100, amplitude: 50, period: 10s}", 1000, 10 * time.Second},
		// 1000 msg/s for 1 s in 5: the second burst starts at 5 s.
		{"bursts", "bursts: {rate: 1000, on: 1s, off: 4s}", 1000, 5 * time.Second},
		// A curve beside the workload file: 100 -> 200 msg/s over 10 s,
		// 1500 sends by its end.
		{"curve", "curve: rates.csv", 1500, 10 * time.Second},
	}
	for _, tc := range cases {
		w, err := Parse(filepath.Join(dir, "w.yaml"), []byte("name: x\nrateProfile:\n  "+tc.src+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := w.Pacing().Due(tc.i); got != tc.want {
			t.Errorf("%s: Due(%d) = %v, want %v", tc.name, tc.i, got, tc.want)
		}
		// The workload travels as JSON (results, distributed workers):
		// the profile, a curve's points included, comes back the same.
		data, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var back Workload
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.RateProfile, w.RateProfile) {
			t.Errorf("%s: %s came back as %+v", tc.name, data, back.RateProfile)
		}
	}
}

// TestRatePacing: a constant rate is a constant profile, no rate none.
func TestRatePacing(t *testing.T) {
	w, err := Parse("w.yaml", []byte("name: x\nrate: 250\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := w.Pacing().(pacer.Constant); !ok || c.PerSecond != 250 {
		t.Errorf("rate 250 paces as %#v", w.Pacing())
	}
	w.ProducerRate = 0
	if w.Pacing() != nil {
		t.Errorf("no rate paces as %#v", w.Pacing())
	}
}

func TestRateProfileErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("0,100\n# note\n5,lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, src string
		want      []string // substrings of the error
	}{
		// rate and rateProfile contradict each other: both lines named.
		{"both", "rate: 5\nrateProfile:\n  ramp: {from: 0, to: 1, over: 1s}\n", []string{"w.yaml:3", `"rateProfile"`, "line 2", "not both"}},
		// Exactly one shape.
		{"two shapes", "rateProfile:\n  ramp: {from: 0, to: 1, over: 1s}\n  sine: {mean: 1, amplitude: 0, period: 1s}\n", []string{"w.yaml:3", "exactly one shape", "got 2"}},
		{"no shape", "rateProfile: {}\n", []string{"w.yaml:2", "exactly one shape"}},
		{"unknown shape", "rateProfile:\n  rmap: {to: 1}\n", []string{"w.yaml:3", `did you mean "ramp"`}},
		// Fields are named in full, at their line.
		{"ramp missing over", "rateProfile:\n  ramp:\n    from: 0\n    to: 10\n", []string{"w.yaml:4", `"rateProfile.ramp.over"`, "missing"}},
		{"ramp to zero", "rateProfile:\n  ramp: {from: 10, to: 0, over: 1s}\n", []string{"w.yaml:3", `"rateProfile.ramp.to"`, "between"}},
		{"ramp bad duration", "rateProfile:\n  ramp: {from: 1, to: 2, over: soon}\n", []string{"w.yaml:3", `"rateProfile.ramp.over"`, `got "soon"`}},
		{"sine below zero", "rateProfile:\n  sine: {mean: 10, amplitude: 20, period: 1m}\n", []string{"w.yaml:3", `"rateProfile.sine.amplitude"`, "below 0"}},
		{"bursts off above on", "rateProfile:\n  bursts: {rate: 10, on: 1s, off: 1s, offRate: 20}\n", []string{`"rateProfile.bursts.offRate"`, "not below"}},
		{"steps not a list", "rateProfile:\n  steps: 5\n", []string{"w.yaml:3", `"rateProfile.steps"`, "list of steps"}},
		{"step without for", "rateProfile:\n  steps:\n    - {rate: 1}\n    - {rate: 2}\n", []string{"w.yaml:4", `"rateProfile.steps.for"`, "missing"}},
		{"last step zero", "rateProfile:\n  steps:\n    - {rate: 1, for: 1s}\n    - {rate: 0}\n", []string{"w.yaml:5", "must be positive"}},
		// A curve's problems name its file and line too.
		{"curve missing", "rateProfile:\n  curve: nope.csv\n", []string{"w.yaml:3", `"rateProfile.curve"`, "nope.csv", "workload file's folder"}},
		{"curve bad line", "rateProfile:\n  curve: bad.csv\n", []string{"w.yaml:3", `"rateProfile.curve"`, "bad.csv:3", `rate must be a number, got "lots"`}},
		// A profile needs producers.
		{"no producers", "producersPerTopic: 0\nrateProfile:\n  ramp: {from: 0, to: 1, over: 1s}\n", []string{`"rateProfile"`, "no producers"}},
	}
	for _, tc := range cases {
		_, err := Parse(filepath.Join(dir, "w.yaml"), []byte("name: x\n"+tc.src))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error does not wrap ErrInvalid: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
}

// TestRateOverrideConflicts: --rate on a workload with a profile is
// reported, not silently preferred.
func TestRateOverrideConflicts(t *testing.T) {
	w, err := Parse("w.yaml", []byte("name: x\nrateProfile:\n  ramp: {from: 0, to: 10, over: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetField("--rate", 0, "rate", "100"); err != nil {
		t.Fatal(err)
	}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("rate over a profile: %v", err)
	}
}
