package brokerbench_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fuzzFunc is a fuzz target's declaration in a test file.
var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)

// makeFuzzLine is one target of the Makefile's fuzz rule:
// "$(GO) test ./internal/pacer -run '^$$' -fuzz '^FuzzReadCurve$$' ...".
var makeFuzzLine = regexp.MustCompile(`test (\./\S+) -run '\^\$\$' -fuzz '\^(Fuzz\w+)\$\$'`)

// TestMakeFuzzRunsEveryTarget checks that 'make fuzz', which CI runs,
// runs every fuzz target in the repository, and none that is gone: a
// parser whose fuzz target is written but never run is not fuzzed.
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	inMake := map[string]bool{}
	for _, m := range makeFuzzLine.FindAllStringSubmatch(string(makefile), -1) {
		inMake[m[1]+" "+m[2]] = true
	}
	inCode := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			inCode["./"+filepath.Dir(path)+" "+m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for target := range inCode {
		if !inMake[target] {
			t.Errorf("the Makefile's fuzz rule does not run %s: add a line for it", target)
		}
	}
	for target := range inMake {
		if !inCode[target] {
			t.Errorf("the Makefile's fuzz rule runs %s, which no test file declares", target)
		}
	}
}
