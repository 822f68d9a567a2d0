package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CheckWritable reports whether a file can be written at path, creating its
// directory if needed, so that a run finds out before it starts rather
// than after it measured. It leaves nothing behind but the directory.
func CheckWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: give a file name", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create directory %s: %w", dir, errors.Unwrap(err))
	}
	f, err := os.CreateTemp(dir, ".brokerbench-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, errors.Unwrap(err))
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// WriteOrFallback writes v to path; if that fails, it writes v to a file
// named after path in the system's temporary directory and returns that
// path with the original error, so that no result is lost.
func WriteOrFallback(path string, v any) (string, error) {
	err := Write(path, v)
	if err == nil {
		return path, nil
	}
	fallback := filepath.Join(os.TempDir(), "brokerbench-"+filepath.Base(path))
	if ferr := Write(fallback, v); ferr != nil {
		return "", fmt.Errorf("%w; the fallback %s failed too: %w", err, fallback, ferr)
	}
	return fallback, err
}
