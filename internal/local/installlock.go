package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// install runs kind's Install while holding the kind's install lock in
// cacheDir, so that two brokerbench processes starting the same kind at
// once (two runs, a run and 'local up', test packages in parallel) never
// download into the same directory together: the second waits, then
// finds the install complete. The lock is the kernel's (flock), so a
// process that dies holding it releases it. Without a cache directory
// there is nothing to share, and no lock.
func install(ctx context.Context, kind Kind, cacheDir string, logf func(string, ...any)) error {
	if cacheDir == "" {
		return kind.Install(ctx, cacheDir, logf)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return fmt.Errorf("install %s: %w", kind.Name(), err)
	}
	path := filepath.Join(cacheDir, "."+kind.Name()+"-"+kind.Version()+"-install.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("install %s: the install lock: %w", kind.Name(), err)
	}
	defer f.Close()
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			return fmt.Errorf("install %s: lock %s: %w", kind.Name(), path, err)
		}
		if !waited {
			logf("waiting for another brokerbench to finish installing %s %s (lock %s)", kind.Product(), kind.Version(), path)
			waited = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("install %s: waiting for another install: %w", kind.Name(), context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return kind.Install(ctx, cacheDir, logf)
}
