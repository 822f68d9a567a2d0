package kube

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// The coordinator pod hands its result files out through its log: each
// file between a begin line naming it and an end line, as base64 of its
// gzipped content in lines of 76 characters. Its other output passes
// through. A line naming the directory in the pod where it writes them
// comes first, so that the paths its output prints can be told apart and
// replaced by the ones the files are copied to.
const (
	fileBegin = "BROKERBENCH-FILE-BEGIN "
	fileEnd   = "BROKERBENCH-FILE-END"
	dirLine   = "BROKERBENCH-RESULTS-DIR "
	// maxFile bounds one file's decoded size.
	maxFile = 256 << 20
)

// WriteFiles writes files to w in the log format, in name order.
func WriteFiles(w io.Writer, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		if n == "" || strings.ContainsAny(n, " \n/\\") {
			return fmt.Errorf("file name %q: no spaces, newlines or slashes", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	bw := bufio.NewWriter(w)
	for _, n := range names {
		var z bytes.Buffer
		gz := gzip.NewWriter(&z)
		if _, err := gz.Write(files[n]); err != nil {
			return err
		}
		if err := gz.Close(); err != nil {
			return err
		}
		enc := base64.StdEncoding.EncodeToString(z.Bytes())
		fmt.Fprintf(bw, "\n%s%s\n", fileBegin, n)
		for len(enc) > 76 {
			fmt.Fprintln(bw, enc[:76])
			enc = enc[76:]
		}
		fmt.Fprintf(bw, "%s\n%s\n", enc, fileEnd)
	}
	return bw.Flush()
}

// WriteResultsDir writes the line naming dir, where the coordinator
// writes its result files in the pod, before any output that prints their
// paths.
func WriteResultsDir(w io.Writer, dir string) error {
	if dir == "" || strings.Contains(dir, "\n") {
		return fmt.Errorf("results directory %q: give a path on one line", dir)
	}
	_, err := fmt.Fprintf(w, "%s%s\n", dirLine, dir)
	return err
}

// ReadFiles reads a log in the format WriteFiles writes: the files it
// holds, and every other line copied to pass (nil discards them). A file
// cut short or not decodable is an error that names it; the files read
// before it are returned with it.
func ReadFiles(r io.Reader, pass io.Writer) (map[string][]byte, error) {
	return ReadFilesAs(r, pass, nil)
}

// ReadFilesAs is ReadFiles with the paths in the pod of the coordinator's
// result files replaced, in the lines copied to pass, by local[name]:
// where each file is written here (or what to say instead of a file that
// is not). Paths of files that local does not name are left as they are.
func ReadFilesAs(r io.Reader, pass io.Writer, local map[string]string) (map[string][]byte, error) {
	files := map[string][]byte{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	name, open := "", false
	var body strings.Builder
	var paths *strings.Replacer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !open && strings.HasPrefix(line, dirLine):
			paths = podPaths(strings.TrimPrefix(line, dirLine), local)
		case !open && strings.HasPrefix(line, fileBegin):
			name, open = strings.TrimPrefix(line, fileBegin), true
			body.Reset()
		case open && line == fileEnd:
			open = false
			data, err := decodeFile(body.String())
			if err != nil {
				return files, fmt.Errorf("file %s in the log: %w", name, err)
			}
			files[name] = data
		case open:
			if body.Len()+len(line) > maxFile*2 {
				return files, fmt.Errorf("file %s in the log: larger than %d bytes", name, maxFile)
			}
			body.WriteString(line)
		case pass != nil:
			if paths != nil {
				line = paths.Replace(line)
			}
			fmt.Fprintln(pass, line)
		}
	}
	if err := sc.Err(); err != nil {
		return files, err
	}
	if open {
		return files, fmt.Errorf("file %s in the log: cut short (the coordinator's log ended inside it)", name)
	}
	return files, nil
}

// podPaths replaces dir/NAME by local[NAME], the longest names first so
// that "run.json.journal" is not taken for "run.json" and a suffix.
func podPaths(dir string, local map[string]string) *strings.Replacer {
	if len(local) == 0 {
		return nil
	}
	names := make([]string, 0, len(local))
	for n := range local {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if len(names[i]) != len(names[j]) {
			return len(names[i]) > len(names[j])
		}
		return names[i] < names[j]
	})
	var pairs []string
	for _, n := range names {
		pairs = append(pairs, path.Join(dir, n), local[n])
	}
	return strings.NewReplacer(pairs...)
}

func decodeFile(b64 string) ([]byte, error) {
	z, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, err
	}
	gz, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(gz, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, errors.New("larger than the limit")
	}
	return data, nil
}
