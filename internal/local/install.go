package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// ErrPrerequisite reports a missing tool needed to install a broker.
var ErrPrerequisite = errors.New("missing prerequisite")

// AptInstall installs a Debian package when find does not find what it
// provides, if brokerbench runs as root with apt-get; otherwise find's
// error says what to install.
func AptInstall(ctx context.Context, pkg string, find func() (string, error), logf func(string, ...any)) error {
	if _, err := find(); err == nil {
		return nil
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil || os.Geteuid() != 0 {
		_, err := find()
		return err
	}
	logf("installing Debian's %s package (apt-get)", pkg)
	for _, args := range [][]string{{"update", "-q"}, {"install", "-y", "-q", "--no-install-recommends", pkg}} {
		cmd := exec.CommandContext(ctx, apt, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", args[0], err, LastLines(string(out), 10))
		}
	}
	_, err = find()
	return err
}

// LastLines returns the last n lines of s, for an error message quoting a
// command's output.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
