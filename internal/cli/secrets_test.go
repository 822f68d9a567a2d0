package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/secret"
)

// TestSecretsNeverReachOutputs: a run and a study whose driver settings
// take values from ${env:NAME} and ${file:PATH} use them (the broker sees
// them as the client id), and no output shows them: not the results, the
// journal, OMB's JSON, the study's index, report and exports, nor what is
// printed. Where they would have been, the mask is.
func TestSecretsNeverReachOutputs(t *testing.T) {
	addr := lazyBroker.Get(t).Addr
	const fromEnv, fromFile = "env-secret-7f3a9", "file-secret-c41d2"
	t.Setenv("BB_TEST_CLIENT_SECRET", fromEnv)
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "client-id.txt")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("client-id.txt", fromFile+"\n")
	wl := write("wl.yaml", `name: secret-run
topics: 1
partitionsPerTopic: 1
messageSize: 100
rate: 500
warmup: 0s
duration: 2s
driver:
  driver: kafka
  commonConfig: {client.id: "${env:BB_TEST_CLIENT_SECRET}"}
`)
	st := write("study.yaml", `name: secret-study
workload: {name: w, topics: 1, partitionsPerTopic: 1, messageSize: 100, rate: 500, warmup: 0s, duration: 2s}
setups:
  - name: from-file
    driver:
      driver: kafka
      commonConfig: {client.id: "${file:`+secretFile+`}"}
quick: {warmup: 0s, duration: 2s}
`)
	out := filepath.Join(dir, "out")
	var printed strings.Builder
	for _, args := range [][]string{
		{"run", wl, "--broker", addr, "--out", filepath.Join(out, "r.json"), "--omb-json", filepath.Join(out, "omb.json")},
		{"study", st, "--scale", "quick", "--broker", addr, "--out", filepath.Join(out, "study")},
	} {
		code, stdout, stderr := execute(args...)
		printed.WriteString(stdout + stderr)
		// A rate this machine could not hold still writes every output.
		if !completed(t, code) {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	masked := 0
	check := func(what, text string) {
		for _, s := range []string{fromEnv, fromFile} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the secret %q", what, s)
			}
		}
		masked += strings.Count(text, secret.Mask)
	}
	check("the printed output", printed.String())
	files := 0
	err := filepath.WalkDir(out, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files++
		check(path, string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 || masked == 0 {
		t.Errorf("%d output files, %d masks: the secrets were not used, or not recorded where they were used", files, masked)
	}
}
