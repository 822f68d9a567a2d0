// Package sysinfo describes the machine and the brokerbench build, for the
// environment section of results files.
package sysinfo

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/results"
)

// Version is the brokerbench release, set at link time with
// -ldflags "-X github.com/brokerbench/brokerbench/internal/sysinfo.Version=...".
var Version = "dev"

// Commit returns the VCS revision the binary was built from, with
// "+dirty" when the work tree had changes, or "unknown".
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// Collect describes this machine and build.
func Collect() results.Environment {
	host, _ := os.Hostname()
	return results.Environment{
		BrokerbenchVersion: Version,
		BrokerbenchCommit:  Commit(),
		GoVersion:          runtime.Version(),
		Hostname:           host,
		OS:                 osName(),
		Kernel:             readTrim("/proc/sys/kernel/osrelease"),
		Arch:               runtime.GOARCH,
		CPUModel:           procField("/proc/cpuinfo", "model name"),
		CPUCores:           runtime.NumCPU(),
		MemoryBytes:        memTotal(),
	}
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func osName() string {
	if v := strings.Trim(procField("/etc/os-release", "PRETTY_NAME"), `"`); v != "" {
		return v
	}
	return runtime.GOOS
}

// procField returns the value of the first "key: value" or "key=value" line
// of path whose key is key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		i := strings.IndexAny(line, ":=")
		if i > 0 && strings.TrimSpace(line[:i]) == key {
			return strings.TrimSpace(line[i+1:])
		}
	}
	return ""
}

func memTotal() int64 {
	fields := strings.Fields(procField("/proc/meminfo", "MemTotal"))
	if len(fields) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(fields[0], 10, 64)
	return kb * 1024
}
