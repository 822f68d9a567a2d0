package main

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// ombArtifact is the artifactId of OMB's root pom.
const ombArtifact = "messaging-benchmark"

// pom is what the comparison reads from a Maven pom.
type pom struct {
	ArtifactID string   `xml:"artifactId"`
	Modules    []string `xml:"modules>module"`
}

// readPom parses a pom's artifactId and modules.
func readPom(data []byte) (pom, error) {
	var p pom
	if err := xml.Unmarshal(data, &p); err != nil {
		return pom{}, fmt.Errorf("read pom.xml: %w", err)
	}
	return p, nil
}

// checkout is an OpenMessaging Benchmark source checkout.
type checkout struct {
	dir    string // absolute
	commit string // HEAD's hash, or "unknown" when dir is not a git checkout
}

// readCheckout checks that dir is an OMB checkout whose reactor holds the
// framework, the driver API and the given driver modules.
func readCheckout(ctx context.Context, dir string, modules []string) (checkout, error) {
	if dir == "" {
		return checkout{}, errors.New("-omb DIR is required: a checkout of https://github.com/openmessaging/benchmark")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return checkout{}, err
	}
	data, err := os.ReadFile(filepath.Join(abs, "pom.xml"))
	if err != nil {
		return checkout{}, fmt.Errorf("-omb %s is not an OMB checkout: %w", dir, err)
	}
	p, err := readPom(data)
	if err != nil {
		return checkout{}, fmt.Errorf("-omb %s: %w", dir, err)
	}
	if p.ArtifactID != ombArtifact {
		return checkout{}, fmt.Errorf("-omb %s is not an OMB checkout: its pom.xml builds %q, not %q", dir, p.ArtifactID, ombArtifact)
	}
	for _, m := range append([]string{"benchmark-framework", "driver-api"}, modules...) {
		if !slices.Contains(p.Modules, m) {
			return checkout{}, fmt.Errorf("-omb %s: its pom.xml has no module %s", dir, m)
		}
	}
	c := checkout{dir: abs, commit: "unknown"}
	if out, err := exec.CommandContext(ctx, "git", "-C", abs, "rev-parse", "HEAD").Output(); err == nil {
		c.commit = strings.TrimSpace(string(out))
	}
	return c, nil
}

var (
	modulesBlock = regexp.MustCompile(`(?s)<modules>.*?</modules>`)
	dependency   = regexp.MustCompile(`(?s)[ \t]*<dependency>.*?</dependency>\s*?\n?`)
	artifactID   = regexp.MustCompile(`<artifactId>\s*([^<]*?)\s*</artifactId>`)
)

// trimPoms rewrites OMB's root pom and its framework's pom so that the
// reactor holds only the framework, the driver API and the given driver
// modules, and the framework depends on no other driver: OMB's framework
// loads drivers by class name, and depends on every driver only to put
// them all on its classpath.
func trimPoms(root, framework []byte, drivers []string) ([]byte, []byte, error) {
	if !modulesBlock.Match(root) {
		return nil, nil, errors.New("the root pom.xml has no <modules>")
	}
	var b strings.Builder
	b.WriteString("<modules>")
	for _, m := range append([]string{"benchmark-framework", "driver-api"}, drivers...) {
		fmt.Fprintf(&b, "<module>%s</module>", m)
	}
	b.WriteString("</modules>")
	root = modulesBlock.ReplaceAllLiteral(root, []byte(b.String()))
	framework = dependency.ReplaceAllFunc(framework, func(dep []byte) []byte {
		m := artifactID.FindSubmatch(dep)
		if m == nil {
			return dep
		}
		name := string(m[1])
		if !strings.HasPrefix(name, "driver-") || name == "driver-api" || slices.Contains(drivers, name) {
			return dep
		}
		return nil
	})
	return root, framework, nil
}

// buildOMB builds OMB's framework and the given driver modules from a
// copy of c's sources under dir (c is left as it is), their dependencies
// resolved from Maven Central, and returns the classpath to run the
// framework with.
func buildOMB(ctx context.Context, c checkout, dir string, drivers []string) (string, error) {
	for _, sub := range append([]string{"pom.xml", "etc", "style", "benchmark-framework", "driver-api"}, drivers...) {
		src, dst := filepath.Join(c.dir, sub), filepath.Join(dir, sub)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) && (sub == "etc" || sub == "style") {
			continue // the build's configuration, absent in some releases
		}
		if out, err := exec.CommandContext(ctx, "cp", "-a", src, dst).CombinedOutput(); err != nil {
			return "", fmt.Errorf("copy the checkout's %s: %w\n%s", sub, err, out)
		}
	}
	rootPom, frameworkPom := filepath.Join(dir, "pom.xml"), filepath.Join(dir, "benchmark-framework", "pom.xml")
	root, err := os.ReadFile(rootPom)
	if err != nil {
		return "", err
	}
	framework, err := os.ReadFile(frameworkPom)
	if err != nil {
		return "", err
	}
	if root, framework, err = trimPoms(root, framework, drivers); err != nil {
		return "", err
	}
	if err := os.WriteFile(rootPom, root, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(frameworkPom, framework, 0o644); err != nil {
		return "", err
	}
	// The style and licence checks are OMB's own CI's business.
	mvn := exec.CommandContext(ctx, "mvn", "-q", "-B", "-pl", "benchmark-framework", "-am", "package", "-DskipTests",
		"-Dspotless.check.skip=true", "-Dspotless.apply.skip=true", "-Dlicense.skip=true",
		"-Dcheckstyle.skip=true", "-Dspotbugs.skip=true", "-Djacoco.skip=true")
	mvn.Dir = dir
	if out, err := mvn.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build OMB with Maven: %w\n%s", err, out)
	}
	deps, err := os.ReadFile(filepath.Join(dir, "benchmark-framework", "target", "classpath.txt"))
	if err != nil {
		return "", fmt.Errorf("OMB's build wrote no classpath: %w", err)
	}
	return filepath.Join(dir, "benchmark-framework", "target", "classes") + ":" + strings.TrimSpace(string(deps)), nil
}

// ombCommand is the command line of OMB's bin/benchmark, the JVM run
// directly (so that its PID is the JVM's), with a fixed heap of the given
// size (the script's default is 4G).
func ombCommand(classpath, heap, driver, out, workload string) []string {
	return []string{"java", "-server", "-cp", classpath, "-Xms" + heap, "-Xmx" + heap, "-XX:+UseG1GC",
		"io.openmessaging.benchmark.Benchmark", "--drivers", driver, "--output", out, workload}
}
