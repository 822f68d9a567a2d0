package nsq

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/brokerbench/brokerbench/internal/local"
)

// Version is the NSQ release brokerbench builds and runs.
const Version = "1.3.0"

// goSvc is the replacement NSQ's own go.mod makes for one of its
// dependencies; a module that builds NSQ's commands must make it too.
const goSvc = "github.com/judwhite/go-svc=github.com/mreiferson/go-svc@v1.2.2-0.20210815184239-7a96e00010f6"

// NewLocal returns a local nsqd on port (its TCP port; its HTTP API on
// another), with default directories ("nsq-PORT" under the state
// directory).
func NewLocal(port, brokers int) *local.Cluster {
	return &local.Cluster{Kind: Kind{}, CacheDir: local.DefaultCacheDir(), StateDir: filepath.Join(local.DefaultStateDir(), fmt.Sprintf("nsq-%d", port)),
		Port: port, Brokers: brokers}
}

// Kind is the local.Kind of a single nsqd, without nsqlookupd: with one
// nsqd, clients connect to it directly and there is nothing to look up.
// nsqd keeps up to 10,000 messages of each topic and channel in memory
// (its default --mem-queue-size) and writes the rest to its data
// directory.
type Kind struct{}

// Name implements local.Kind.
func (Kind) Name() string { return "nsq" }

// Product implements local.Kind.
func (Kind) Product() string { return "NSQ" }

// Version implements local.Kind.
func (Kind) Version() string { return Version }

func nsqdBinary(cacheDir string) string {
	return filepath.Join(cacheDir, "nsq-"+Version, "nsqd")
}

// Install builds the pinned nsqd release from the Go module proxy into
// cacheDir, unless already there (Build).
func (Kind) Install(ctx context.Context, cacheDir string, logf func(string, ...any)) error {
	bin := nsqdBinary(cacheDir)
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	logf("building nsqd %s from the Go module proxy into %s (about 20 s on first use)", Version, filepath.Dir(bin))
	return Build(ctx, filepath.Dir(bin), "apps/nsqd")
}

// Build builds commands of the pinned NSQ release, packages of module
// github.com/nsqio/nsq ("apps/nsqd", "bench/bench_writer"), from the Go
// module proxy into dir. It needs the Go toolchain. NSQ's go.mod replaces
// a dependency, which 'go install module@version' refuses, so the build
// goes through a module of its own, made in a temporary directory beside
// dir, that makes the same replacement.
func Build(ctx context.Context, dir string, pkgs ...string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: the Go toolchain is needed to build NSQ %s from the Go module proxy: install Go, or put its %s binaries in %s",
			local.ErrPrerequisite, Version, strings.Join(pkgs, ", "), dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	build, err := os.MkdirTemp(filepath.Dir(dir), "nsq-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(build)
	steps := [][]string{
		{"mod", "init", "brokerbench.local/nsqbuild"},
		{"mod", "edit", "-replace", goSvc},
		{"get", "github.com/nsqio/nsq@v" + Version},
	}
	for _, pkg := range pkgs {
		steps = append(steps, []string{"install", "github.com/nsqio/nsq/" + pkg})
	}
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, goTool, args...)
		cmd.Dir = build
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build NSQ %s: go %s: %w\n%s", Version, strings.Join(args, " "), err, local.LastLines(string(out), 20))
		}
	}
	return nil
}

// Layout implements local.Kind: one nsqd on loopback, its TCP port the
// cluster's client port and its HTTP API on a port of its own.
func (Kind) Layout(c *local.Cluster) []*local.Node {
	return []*local.Node{{ID: 1, Roles: []string{"broker"}, Host: local.LoopbackHost(true, false, 1),
		Ports: map[string]int{"client": 0, "http": 0}, Dir: filepath.Join(c.StateDir, "node-1")}}
}

// Configure implements local.Kind: nsqd takes its settings as flags
// (Command); its data directory is made here. Its module declares one
// node and no links, so package brokers refuses more before a cluster
// starts.
func (Kind) Configure(ctx context.Context, c *local.Cluster, fresh bool) error {
	return os.MkdirAll(filepath.Join(c.Nodes()[0].Dir, "data"), 0o755)
}

// MetricsURL implements local.Metered: nsqd's statistics, as JSON.
func (Kind) MetricsURL(c *local.Cluster, n *local.Node) string {
	return "http://" + n.Addr("http") + "/stats?format=json"
}

// Command implements local.Kind.
func (Kind) Command(c *local.Cluster, n *local.Node) []string {
	return []string{nsqdBinary(c.CacheDir), "--data-path=" + filepath.Join(n.Dir, "data"),
		"--tcp-address=" + n.Addr("client"), "--http-address=" + n.Addr("http"), "--broadcast-address=" + n.Host}
}

// Ready implements local.Kind: nsqd answers /ping.
func (Kind) Ready(ctx context.Context, c *local.Cluster) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Nodes()[0].Addr("http")+"/ping", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("nsqd /ping: %s", resp.Status)
	}
	return nil
}
