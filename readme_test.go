// Package brokerbench_test holds checks on the repository as a whole, not
// on one package.
package brokerbench_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packageRoots are the folders whose Go packages README.md's layout
// section lists, one line each.
var packageRoots = []string{"cmd", "internal", "bench"}

// layoutLine is a package's line in the layout section:
// "- `internal/pacer`: what it provides".
var layoutLine = regexp.MustCompile("^- `((?:cmd|internal|bench)/[^`]+)`: ")

// TestReadmeLayoutListsEveryPackage checks that README.md's layout section
// has a line for every Go package under cmd/, internal/ and bench/, and
// none for a package that no longer exists: whoever adds, moves or removes
// a package is told which line to write.
func TestReadmeLayoutListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(layoutSection(string(readme)), "\n") {
		m := layoutLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if listed[m[1]] {
			t.Errorf("README.md's layout section lists %s twice", m[1])
		}
		listed[m[1]] = true
	}
	if len(listed) == 0 {
		t.Fatal("README.md has no layout section (\"## Layout\") with lines \"- `internal/name`: what it provides\"")
	}

	pkgs, err := goPackages(packageRoots)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if !listed[p] {
			t.Errorf("package %s is not in README.md's layout section: add the line \"- `%s`: what it provides\"", p, p)
		}
	}
	for _, p := range sortedKeys(listed) {
		if !slices.Contains(pkgs, p) {
			t.Errorf("README.md's layout section lists %s, which is not a package (no non-test .go files there): remove or correct its line", p)
		}
	}
}

// layoutSection is the text of README's "## Layout" section, up to the
// next section of the same level.
func layoutSection(readme string) string {
	_, after, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return ""
	}
	section, _, _ := strings.Cut(after, "\n## ")
	return section
}

// goPackages lists, in slash-separated paths from the repository root, the
// folders under roots that hold a Go package of this module: a non-test
// .go file. Like the go command, it skips testdata and folders whose names
// start with "." or "_", and folders holding a module of their own.
func goPackages(roots []string) ([]string, error) {
	var pkgs []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				name := d.Name()
				if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				dir := filepath.ToSlash(filepath.Dir(path))
				if !slices.Contains(pkgs, dir) {
					pkgs = append(pkgs, dir)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(pkgs)
	return pkgs, nil
}

func sortedKeys(m map[string]bool) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
