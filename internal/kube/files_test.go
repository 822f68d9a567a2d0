package kube

import (
	"bytes"
	"strings"
	"testing"
)

func TestFilesRoundTripThroughALog(t *testing.T) {
	files := map[string][]byte{"run.json": bytes.Repeat([]byte(`{"a":1}`), 1000), "omb.json": []byte("{}"), "empty": nil}
	var log bytes.Buffer
	log.WriteString("progress line\n")
	if err := WriteFiles(&log, files); err != nil {
		t.Fatal(err)
	}
	log.WriteString("after\n")
	var pass bytes.Buffer
	got, err := ReadFiles(&log, &pass)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range files {
		if !bytes.Equal(got[n], want) {
			t.Errorf("%s: got %d bytes, want %d", n, len(got[n]), len(want))
		}
	}
	if !strings.Contains(pass.String(), "progress line") || !strings.Contains(pass.String(), "after") || strings.Contains(pass.String(), fileBegin) {
		t.Errorf("passed through: %q", pass.String())
	}
	// A log cut inside a file says so.
	var cut bytes.Buffer
	_ = WriteFiles(&cut, map[string][]byte{"run.json": []byte("x")})
	_, err = ReadFiles(strings.NewReader(strings.TrimSuffix(cut.String(), fileEnd+"\n")), nil)
	if err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("cut log: %v", err)
	}
	if err := WriteFiles(&cut, map[string][]byte{"a b": nil}); err == nil {
		t.Error("a name with a space was accepted")
	}
}

func FuzzReadFiles(f *testing.F) {
	var log bytes.Buffer
	_ = WriteFiles(&log, map[string][]byte{"run.json": []byte(`{"x":1}`)})
	f.Add(log.Bytes())
	f.Add([]byte(fileBegin + "x\nnotbase64\n" + fileEnd + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := ReadFiles(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		// What was read writes and reads back the same.
		var again bytes.Buffer
		if err := WriteFiles(&again, files); err != nil {
			return // names a writer refuses can come from a hand-made log
		}
		back, err := ReadFiles(&again, nil)
		if err != nil || len(back) != len(files) {
			t.Fatalf("files did not round-trip: %v", err)
		}
		for n := range files {
			if !bytes.Equal(back[n], files[n]) {
				t.Fatalf("%s changed", n)
			}
		}
	})
}

// TestReadFilesAsSaysTheLocalPaths: the paths in the pod that the
// coordinator's output names become where the files are copied here (the
// longest name first: the journal is not run.json plus a suffix), a file
// not copied is said to be so, and the line naming the directory is not
// passed on.
func TestReadFilesAsSaysTheLocalPaths(t *testing.T) {
	var log bytes.Buffer
	if err := WriteResultsDir(&log, "/tmp/brokerbench-results-42"); err != nil {
		t.Fatal(err)
	}
	log.WriteString("results: /tmp/brokerbench-results-42/run.json (PARTIAL)\n")
	log.WriteString("OMB results: /tmp/brokerbench-results-42/omb.json\n")
	log.WriteString("journal: /tmp/brokerbench-results-42/run.json.journal.jsonl\n")
	log.WriteString("other: /tmp/brokerbench-results-42/cpu.pprof\n")
	if err := WriteFiles(&log, map[string][]byte{"run.json": []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	local := map[string]string{
		"run.json":               "results/quick-k8s-bb-1.json",
		"run.json.journal.jsonl": "results/quick-k8s-bb-1.json.journal.jsonl",
		"omb.json":               "not copied here",
	}
	var pass bytes.Buffer
	files, err := ReadFilesAs(&log, &pass, local)
	if err != nil || string(files["run.json"]) != "{}" {
		t.Fatalf("files %v, err %v", files, err)
	}
	want := "results: results/quick-k8s-bb-1.json (PARTIAL)\n" +
		"OMB results: not copied here\n" +
		"journal: results/quick-k8s-bb-1.json.journal.jsonl\n" +
		"other: /tmp/brokerbench-results-42/cpu.pprof\n" +
		"\n" // WriteFiles sets each file off with an empty line
	if pass.String() != want {
		t.Errorf("passed on:\n%s\nwant:\n%s", pass.String(), want)
	}
	// Without local paths (k8s results), the paths are left, and the
	// directory's line is still not passed on.
	pass.Reset()
	if _, err := ReadFiles(strings.NewReader(dirLine+"/tmp/d\nresults: /tmp/d/run.json\n"), &pass); err != nil || pass.String() != "results: /tmp/d/run.json\n" {
		t.Errorf("without local paths: %q, %v", pass.String(), err)
	}
	if err := WriteResultsDir(&log, "a\nb"); err == nil {
		t.Error("a directory on two lines was accepted")
	}
}
