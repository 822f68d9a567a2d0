package cli

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

// workerFlags are the flags that spread a run over workers.
type workerFlags struct {
	urls      []string
	file      string
	placement string
	wait      time.Duration
	// local is the number of worker processes to start on this machine.
	local int
}

// list returns the workers' base URLs from --workers or --workers-file
// (one per line, # comments), each checked; none for a run in this
// process.
func (f *workerFlags) list() ([]string, distributed.Placement, error) {
	given := 0
	for _, set := range []bool{len(f.urls) > 0, f.file != "", f.local != 0} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, "", usageError{errors.New("give the workers with one of --workers, --workers-file and --local-workers")}
	}
	if f.local < 0 || f.local > 256 {
		return nil, "", usageError{fmt.Errorf("--local-workers %d: give 1 to 256", f.local)}
	}
	raw, from := f.urls, "--workers"
	if f.file != "" {
		data, err := os.ReadFile(f.file)
		if err != nil {
			return nil, "", usageError{fmt.Errorf("--workers-file: %w", err)}
		}
		raw, from = nil, f.file
		for _, line := range strings.Split(string(data), "\n") {
			if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) != "" {
				raw = append(raw, strings.TrimSpace(line))
			}
		}
		if len(raw) == 0 {
			return nil, "", usageError{fmt.Errorf("--workers-file %s names no worker: give one URL (http://host:port) per line", f.file)}
		}
	}
	placement, err := distributed.ParsePlacement(f.placement)
	if err != nil {
		return nil, "", usageError{fmt.Errorf("--placement: %w", err)}
	}
	var out []string
	for _, r := range raw {
		u, err := workerURL(r)
		if err != nil {
			return nil, "", usageError{fmt.Errorf("%s: %w", from, err)}
		}
		out = append(out, u)
	}
	return out, placement, nil
}

// distributed reports whether the run is spread over workers.
func (f *workerFlags) distributed() bool {
	return len(f.urls) > 0 || f.file != "" || f.local > 0
}

// startLocal starts the --local-workers processes, if any, and returns
// their URLs and a function that stops them.
func (f *workerFlags) startLocal() ([]string, func(), error) {
	if f.local == 0 {
		return nil, func() {}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	l, err := distributed.StartLocal(exe, f.local, nil)
	if err != nil {
		return nil, nil, withCode(ExitRunFailed, err)
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
		return src, usageError{fmt.Errorf("the %s driver's broker is in this process, where workers in other processes cannot reach it: run without workers", dc.Name)}
	}
	if needsCredentials {
		return src, usageError{errors.New("workers cannot use the credentials of a secured local cluster yet: give the driver config its own credentials (as ${file:...} references the workers can read)")}
	}
	if len(opts.Hosts) > 0 {
		return src, usageError{errors.New("workers cannot reach a local cluster through its links yet: run without --links")}
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
