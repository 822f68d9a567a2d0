package engine

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/distributed"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// WorkerOptions spread a run over workers.
type WorkerOptions struct {
	// URLs are the workers' addresses; File names a file that lists them,
	// one per line (# comments).
	URLs []string
	File string
	// Placement is how producers and consumers are spread: spread or
	// by-topic.
	Placement string
	// Wait is how long to wait for workers that do not answer yet.
	Wait time.Duration
	// Local is the number of worker processes to start on this machine.
	Local int
}

// list returns the workers' base URLs from --workers or --workers-file
// (one per line, # comments), each checked; none for a run in this
// process.
func (f *WorkerOptions) list() ([]string, distributed.Placement, error) {
	given := 0
	for _, set := range []bool{len(f.URLs) > 0, f.File != "", f.Local != 0} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, "", badInput(errors.New("give the workers with one of --workers, --workers-file and --local-workers"))
	}
	if f.Local < 0 || f.Local > 256 {
		return nil, "", badInputf("--local-workers %d: give 1 to 256", f.Local)
	}
	raw, from := f.URLs, "--workers"
	if f.File != "" {
		data, err := os.ReadFile(f.File)
		if err != nil {
			return nil, "", badInputf("--workers-file: %w", err)
		}
		raw, from = nil, f.File
		for _, line := range strings.Split(string(data), "\n") {
			if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" {
				raw = append(raw, strings.TrimSpace(line))
			}
		}
		if len(raw) == 0 {
			return nil, "", badInputf("--workers-file %s names no worker: give one URL (http://host:port) per line", f.File)
		}
	}
	placement, err := distributed.ParsePlacement(f.Placement)
	if err != nil {
		return nil, "", badInputf("--placement: %w", err)
	}
	var out []string
	for _, r := range raw {
		u, err := workerURL(r)
		if err != nil {
			return nil, "", badInputf("%s: %w", from, err)
		}
		out = append(out, u)
	}
	return out, placement, nil
}

// distributed reports whether the run is spread over workers.
func (f *WorkerOptions) distributed() bool {
	return len(f.URLs) > 0 || f.File != "" || f.Local > 0
}

// startLocal starts the --local-workers processes, if any, and returns
// their URLs and a function that stops them.
func (f *WorkerOptions) startLocal() ([]string, func(), error) {
	if f.Local == 0 {
		return nil, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	l, err := distributed.StartLocal(exe, f.Local, nil)
	if err != nil {
		return nil, nil, failed(err)
	}
	return l.URLs, l.Stop, nil
}

// workerURL turns host:port or http://host:port into a base URL.
func workerURL(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("worker %q: give http://host:port, as 'brokerbench worker --listen' prints", s)
	}
	return "http://" + u.Host, nil
}

// driverSource tells workers how to make the driver dc: from the text of
// its file, with the endpoints this process connected to.
// needsCredentials says the driver connects with the local cluster's
// credentials, which workers do not get.
func driverSource(dc *workload.DriverConfig, driverFile, workloadFile string, w *workload.Workload, opts driver.Options, needsCredentials bool) (distributed.DriverSource, error) {
	src := distributed.DriverSource{Endpoints: opts.Endpoints}
	if reg, _ := brokers.Lookup(dc.Name); reg.InProcess {
		return src, badInputf("the %s driver's broker is in this process, where workers in other processes cannot reach it: run without workers", dc.Name)
	}
	if needsCredentials {
		return src, badInput(errors.New("workers cannot use the credentials of a secured local cluster yet: name the cluster's addresses and credentials in the driver config itself (the credentials as ${file:...} references the workers can read; 'brokerbench local status' shows where they are), or use a listener that asks for none"))
	}
	if len(opts.Hosts) > 0 {
		return src, badInput(errors.New("workers cannot reach a local cluster through its links yet: run without --links"))
	}
	switch {
	case driverFile != "":
		src.Name = driverFile
	case w.Driver != nil && w.Driver == dc:
		src.Name, src.Inline = workloadFile, true
	default:
		return src, nil
	}
	text, err := os.ReadFile(src.Name)
	if err != nil {
		return src, fmt.Errorf("read %s for the workers: %w", src.Name, err)
	}
	src.Text = string(text)
	return src, nil
}
