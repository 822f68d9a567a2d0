package all_test

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokermetrics"
	"github.com/brokerbench/brokerbench/internal/brokers"
	_ "github.com/brokerbench/brokerbench/internal/brokers/all"
)

// root is the repository's root, from this package's folder.
const root = "../../.."

// TestEveryModuleIsWhole walks every registered broker: its package has a
// test that runs the conformance suite on it, it has a local kind whose
// clusters are of that kind or says why none, a metrics source or says
// why none, and a docs page that exists and that docs/drivers.md links.
func TestEveryModuleIsWhole(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(root, "docs", "drivers.md"))
	if err != nil {
		t.Fatal(err)
	}
	mods := brokers.Modules()
	if len(mods) == 0 {
		t.Fatal("no broker is registered")
	}
	for _, m := range mods {
		t.Run(m.Name, func(t *testing.T) {
			dir := packageDir(t, m.New)
			if !conformanceTested(t, dir, m.Name) {
				t.Errorf("no test in %s calls brokertest.Run(t, %q, ...): every broker passes the conformance suite", dir, m.Name)
			}
			switch {
			case m.Local == nil && m.NoLocal == "":
				t.Error("neither a local kind nor why it has none")
			case m.Local != nil:
				if c := m.Local.New(m.Local.Port, 1); c.Kind.Name() != m.Local.Kind {
					t.Errorf("the local kind %q makes clusters of kind %q", m.Local.Kind, c.Kind.Name())
				}
			}
			if m.Metrics == nil && m.NoMetrics == "" {
				t.Error("neither a metrics source nor why it has none")
			}
			if m.Metrics != nil && (m.Metrics.Endpoint == "" || (m.Metrics.Serves == nil) != (m.Metrics.Read == nil)) {
				t.Errorf("metrics source %+v: it says what a node serves, and gives Serves and Read together or neither", *m.Metrics)
			}
			if !strings.HasPrefix(m.Docs, "docs/drivers/") {
				t.Errorf("docs page %q is not under docs/drivers/", m.Docs)
			}
			if _, err := os.Stat(filepath.Join(root, m.Docs)); err != nil {
				t.Errorf("docs page: %v", err)
			}
			if link := "(" + strings.TrimPrefix(m.Docs, "docs/") + ")"; !strings.Contains(string(index), link) {
				t.Errorf("docs/drivers.md does not link %s", link)
			}
		})
	}
}

// packageDir is the folder, from the repository's root, of the package
// that declares the function f.
func packageDir(t *testing.T, f any) string {
	t.Helper()
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() // github.com/brokerbench/brokerbench/internal/brokers/kafka.New
	const module = "github.com/brokerbench/brokerbench/"
	pkg, ok := strings.CutPrefix(name[:strings.LastIndex(name, ".")], module)
	if !ok || !strings.HasPrefix(pkg, "internal/brokers/") {
		t.Fatalf("the driver factory %s is not in a folder under internal/brokers", name)
	}
	return pkg
}

// conformanceTested reports whether a test file of the package in dir
// runs the conformance suite on the broker called name.
func conformanceTested(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	call := "brokertest.Run(t, " + `"` + name + `"`
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(src), call) {
			return true
		}
	}
	return false
}

// TestMetricsReaderByEndpoint: an endpoint is read by the broker whose
// form it has (a NATS server's /varz, a Redis server), else as
// Prometheus text.
func TestMetricsReaderByEndpoint(t *testing.T) {
	prometheus := reflect.ValueOf(brokermetrics.Prometheus).Pointer()
	for url, isPrometheus := range map[string]bool{
		"http://127.0.0.1:7071/metrics":  true,
		"https://10.0.0.5:15692/metrics": true,
		"http://127.0.0.1:8222/varz":     false,
		"redis://127.0.0.1:6379":         false,
	} {
		if got := reflect.ValueOf(brokers.MetricsReader(url)).Pointer() == prometheus; got != isPrometheus {
			t.Errorf("%s read as Prometheus text: %v, want %v", url, got, isPrometheus)
		}
	}
}
