package kube

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The coordinator pod hands its result files out through its log: each
// file between a begin line naming it and an end line, as base64 of its
// gzipped content in lines of 76 characters. Its other output passes
// through.
const (
	fileBegin = "BROKERBENCH-FILE-BEGIN "
	fileEnd   = "BROKERBENCH-FILE-END"
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

// ReadFiles reads a log in the format WriteFiles writes: the files it
// holds, and every other line copied to pass (nil discards them). A file
// cut short or not decodable is an error that names it; the files read
// before it are returned with it.
func ReadFiles(r io.Reader, pass io.Writer) (map[string][]byte, error) {
	files := map[string][]byte{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	name, open := "", false
	var body strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
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
