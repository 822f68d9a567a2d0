package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
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

var releaseRE = regexp.MustCompile(`^(\d+)\.(\d+)\.\d+$`)

// CheckRelease checks that version names a release, major.minor.patch,
// no older than major.minor oldest ("3.7"); what names the software in
// errors ("Kafka") and why says why older ones are not run.
func CheckRelease(what, version, oldest, why string) error {
	m := releaseRE.FindStringSubmatch(version)
	if m == nil {
		return fmt.Errorf("%s release %q: want major.minor.patch, such as %s.0", what, version, oldest)
	}
	o := releaseRE.FindStringSubmatch(oldest + ".0")
	for i := 1; i <= 2; i++ {
		have, _ := strconv.Atoi(m[i])
		want, _ := strconv.Atoi(o[i])
		if c := cmp.Compare(have, want); c != 0 {
			if c < 0 {
				return fmt.Errorf("%s release %s: brokerbench runs %s %s.0 or newer (%s)", what, version, what, oldest, why)
			}
			break
		}
	}
	return nil
}
