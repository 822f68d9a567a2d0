package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCaptureRefusesBadInput: capture's mistakes exit 2, saying what to
// fix, before anything connects or is written.
func TestCaptureRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	nats := filepath.Join(dir, "nats.yaml")
	if err := os.WriteFile(nats, []byte("driver: nats\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		// No topic to read.
		{"no topic", []string{"capture", "--broker", "127.0.0.1:1", "--out", out}, "--topic"},
		// A duration of nothing, or beyond the bound.
		{"zero duration", []string{"capture", "--broker", "127.0.0.1:1", "--topic", "t", "--duration", "0s", "--out", out}, "--duration"},
		{"long duration", []string{"capture", "--broker", "127.0.0.1:1", "--topic", "t", "--duration", "13h", "--out", out}, "at most 12h"},
		// A driver file of another broker.
		{"not kafka", []string{"capture", "--driver", nats, "--topic", "t", "--out", out}, "Kafka topics only"},
		// No broker at all.
		{"no broker", []string{"capture", "--topic", "t", "--out", out}, "--broker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := execute(tc.args...)
			if code != ExitInvalidInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, ExitInvalidInput, stderr, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the output folder was made for bad input: %v", err)
	}
}
