package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// MavenSettings is the Maven settings file the installs from Maven
// Central run with: it sends every repository but Maven Central to a URL
// that fails at once, so transitive POMs naming unreachable repositories
// cannot stall the download.
const MavenSettings = `<settings>
  <mirrors>
    <mirror><id>central-only</id><mirrorOf>external:*,!central</mirrorOf><url>file:///nonexistent-brokerbench-mirror</url></mirror>
  </mirrors>
</settings>
`

// Maven returns the path of mvn, or an ErrPrerequisite error saying that
// what ("Kafka 4.3.1") needs it.
func Maven(what string) (string, error) {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("%w: Maven (mvn) is needed to download %s from Maven Central: install it (Debian: apt-get install maven)", ErrPrerequisite, what)
	}
	return mvn, nil
}

// MavenDependencies downloads the runtime dependencies of the POM pom
// from Maven Central into dir/lib, replacing what lib held; pom.xml and
// the settings (MavenSettings) are written to dir. what names the
// release in errors ("Kafka 4.3.1").
func MavenDependencies(ctx context.Context, dir, pom, what string) error {
	mvn, err := Maven(what)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(pom), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.xml"), []byte(MavenSettings), 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(filepath.Join(dir, "lib"))
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-s", "settings.xml",
		"dependency:copy-dependencies", "-DoutputDirectory=lib", "-DincludeScope=runtime")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("download %s with Maven: %w\n%s", what, err, LastLines(string(out), 20))
	}
	return nil
}

var javaVersionRE = regexp.MustCompile(`version "(\d+)`)

// CheckJava returns an ErrPrerequisite error unless the java on the PATH
// is release minVersion or newer; what names who needs it ("Kafka 4.3.1").
func CheckJava(ctx context.Context, what string, minVersion int) error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("%w: Java %d or newer is needed to run %s: install it (Debian: apt-get install openjdk-%[2]d-jre-headless)", ErrPrerequisite, minVersion, what)
	}
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s -version failed: %v", ErrPrerequisite, java, err)
	}
	m := javaVersionRE.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("%w: cannot read the Java version from %q", ErrPrerequisite, LastLines(string(out), 3))
	}
	if v, _ := strconv.Atoi(string(m[1])); v < minVersion {
		return fmt.Errorf("%w: %s needs Java %d or newer, found Java %d", ErrPrerequisite, what, minVersion, v)
	}
	return nil
}
