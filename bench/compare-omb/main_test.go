package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ombRootPom is the part of OMB's root pom.xml the comparison reads.
const ombRootPom = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
    <modelVersion>4.0.0</modelVersion>
    <groupId>io.openmessaging.benchmark</groupId>
    <artifactId>messaging-benchmark</artifactId>
    <version>0.0.1-SNAPSHOT</version>
    <modules>
        <module>benchmark-framework</module>
        <module>driver-api</module>
        <module>driver-pulsar</module>
        <module>driver-kafka</module>
        <module>driver-rabbitmq</module>
    </modules>
    <dependencyManagement>
        <dependencies>
            <dependency>
                <groupId>com.beust</groupId>
                <artifactId>jcommander</artifactId>
            </dependency>
        </dependencies>
    </dependencyManagement>
</project>
`

// ombFrameworkPom is the shape of OMB's benchmark-framework/pom.xml.
const ombFrameworkPom = `<project>
    <artifactId>benchmark-framework</artifactId>
    <dependencies>
        <dependency>
            <groupId>${project.groupId}</groupId>
            <artifactId>driver-api</artifactId>
            <version>${project.version}</version>
        </dependency>
        <dependency>
            <groupId>${project.groupId}</groupId>
            <artifactId>driver-artemis</artifactId>
            <version>${project.version}</version>
            <exclusions>
                <exclusion>
                    <groupId>io.netty</groupId>
                    <artifactId>*</artifactId>
                </exclusion>
            </exclusions>
        </dependency>
        <dependency>
            <groupId>${project.groupId}</groupId>
            <artifactId>driver-kafka</artifactId>
            <version>${project.version}</version>
        </dependency>
        <dependency>
            <groupId>com.beust</groupId>
            <artifactId>jcommander</artifactId>
        </dependency>
    </dependencies>
</project>
`

func TestReadCheckout(t *testing.T) {
	write := func(t *testing.T, pom string) string {
		dir := t.TempDir()
		if pom != "" {
			if err := os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(pom), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name    string
		pom     string
		modules []string
		wantErr string // "" for none
	}{
		// OMB's root pom with the driver asked for.
		{"omb", ombRootPom, []string{"driver-kafka"}, ""},
		// A directory without pom.xml is not a checkout.
		{"no pom", "", nil, "is not an OMB checkout"},
		// Another Maven project.
		{"other project", strings.Replace(ombRootPom, "messaging-benchmark", "kafka-tools", 1), nil, `builds "kafka-tools"`},
		// A pom that is not XML.
		{"not xml", "name: omb\n", nil, "read pom.xml"},
		// A checkout whose reactor lacks the driver asked for.
		{"no such driver", ombRootPom, []string{"driver-nsq"}, "no module driver-nsq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := readCheckout(context.Background(), write(t, tc.pom), tc.modules)
			if tc.wantErr == "" {
				if err != nil || !filepath.IsAbs(c.dir) || c.commit == "" {
					t.Fatalf("readCheckout = %+v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := readCheckout(context.Background(), "", nil); err == nil || !strings.Contains(err.Error(), "-omb DIR is required") {
		t.Fatalf("no -omb: error = %v", err)
	}
}

func TestTrimPoms(t *testing.T) {
	root, framework, err := trimPoms([]byte(ombRootPom), []byte(ombFrameworkPom), []string{"driver-kafka"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := readPom(root)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Modules, ",") != "benchmark-framework,driver-api,driver-kafka" {
		t.Errorf("modules = %v, want the framework, the API and Kafka's driver", p.Modules)
	}
	if !strings.Contains(string(root), "<artifactId>jcommander</artifactId>") {
		t.Error("the root pom lost its dependency management")
	}
	f := string(framework)
	for _, kept := range []string{"driver-api", "driver-kafka", "jcommander"} {
		if !strings.Contains(f, "<artifactId>"+kept+"</artifactId>") {
			t.Errorf("the framework's pom lost its dependency on %s:\n%s", kept, f)
		}
	}
	if strings.Contains(f, "driver-artemis") || strings.Contains(f, "io.netty") {
		t.Errorf("the framework's pom still depends on Artemis' driver:\n%s", f)
	}
	if _, _, err := trimPoms([]byte("<project/>"), []byte(ombFrameworkPom), nil); err == nil {
		t.Error("a root pom without modules was trimmed")
	}
}

func TestParseOMBResult(t *testing.T) {
	for _, tc := range []struct {
		name          string
		json          string
		wantPublished int64
		wantRate      float64
		wantErr       bool
	}{
		// Six 10 s intervals of a one-minute run at about 20,000 msg/s.
		{"one minute", `{"workload":"w","publishRate":[20000.5,19999.5,20000,20000,20000,20000],"consumeRate":[20000]}`, 1_200_000, 20000, false},
		// OMB's result without a measured interval: nothing to compare.
		{"no intervals", `{"publishRate":[]}`, 0, 0, true},
		// Jackson writes NaN unquoted for a rate of 0/0: not JSON.
		{"NaN", `{"publishRate":[NaN]}`, 0, 0, true},
		// A negative rate is no rate.
		{"negative", `{"publishRate":[-1]}`, 0, 0, true},
		// A result still being written.
		{"truncated", `{"publishRate":[20000,`, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseOMBResult([]byte(tc.json))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if r.Published != tc.wantPublished || r.Rate != tc.wantRate {
				t.Errorf("parseOMBResult = %+v, want %d published at %v msg/s", r, tc.wantPublished, tc.wantRate)
			}
		})
	}
}

// TestRunChildStopsAProcessThatDoesNotExit runs a shell that writes its
// result, starts a child, and never exits, as OMB's JVM does: runChild
// returns once the result is there and the whole group is gone.
func TestRunChildStopsAProcessThatDoesNotExit(t *testing.T) {
	dir := t.TempDir()
	result := filepath.Join(dir, "result")
	pidFile := filepath.Join(dir, "child")
	script := `sleep 300 & echo $! > "$2"; echo done > "$1"; wait`
	finished := func() bool { _, err := os.Stat(result); return err == nil }
	ps, wall, err := runChild(context.Background(), dir, []string{"sh", "-c", script, "sh", result, pidFile}, filepath.Join(dir, "log"), time.Minute, finished)
	if err != nil {
		t.Fatal(err)
	}
	if ps == nil || wall <= 0 || wall > 60 {
		t.Fatalf("runChild = %v, %v s", ps, wall)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("the child %d is still there (kill 0: %v)", pid, err)
	}
}

// TestRunChildSaysWhenTheProcessExitsWithoutResult: a tool that fails
// before writing its result is an error, not a measurement.
func TestRunChildSaysWhenTheProcessExitsWithoutResult(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runChild(context.Background(), dir, []string{"sh", "-c", "exit 2"}, filepath.Join(dir, "log"), time.Minute, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "exited before it wrote its result") {
		t.Fatalf("error = %v", err)
	}
}

func FuzzParseOMBResult(f *testing.F) {
	f.Add([]byte(`{"publishRate":[20000.5,19999.5]}`))
	f.Add([]byte(`{"publishRate":[1e308,1e308]}`))
	f.Add([]byte(`{"publishRate":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseOMBResult(data)
		if err == nil && (r.Published < 0 || r.Rate < 0) {
			t.Fatalf("parseOMBResult(%q) = %+v", data, r)
		}
	})
}

func FuzzReadPom(f *testing.F) {
	f.Add([]byte(ombRootPom))
	f.Add([]byte(ombFrameworkPom))
	f.Add([]byte("<project><modules><module>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = readPom(data)
		root, framework, err := trimPoms(data, data, []string{"driver-kafka"})
		if err == nil && (root == nil || len(framework) > len(data)) {
			t.Fatalf("trimPoms(%q) = %q, %q", data, root, framework)
		}
	})
}

// TestRunChildBoundsAProcessThatNeverFinishes runs a shell that never
// writes its result, as OMB's JVM with its Redis driver: runChild says
// it hung once the bound is past, and its whole group is gone.
func TestRunChildBoundsAProcessThatNeverFinishes(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	script := `sleep 300 & echo $! > "$1"; wait`
	_, _, err := runChild(context.Background(), dir, []string{"sh", "-c", script, "sh", pidFile}, filepath.Join(dir, "log"), 2*time.Second, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "hung") {
		t.Fatalf("error = %v, want one saying the process hung", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("the child %d is still there (kill 0: %v)", pid, err)
	}
}

func TestWorkloadsOf(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, tc := range []struct {
		name   string
		broker string
		list   string
		want   []string // base names; nil for an error
	}{
		// Kafka runs the comparison's default workloads.
		{"default", "kafka", "", []string{"omb-fixed-20k-1kb.yaml", "omb-max-rate-100b.yaml"}},
		// OMB's RabbitMQ driver takes one partition: their copies with one.
		{"single partition", "rabbitmq", "", []string{"omb-fixed-20k-1kb-1-partition.yaml", "omb-max-rate-100b-1-partition.yaml"}},
		// -workload wins over a broker's defaults.
		{"named", "rabbitmq", "bench/workloads/omb-fixed-20k-1kb.yaml", []string{"omb-fixed-20k-1kb.yaml"}},
		// A file that is not there.
		{"missing", "kafka", "bench/workloads/none.yaml", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := workloadsOf(brokers[tc.broker], tc.list)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("workloadsOf = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, w := range got {
				if !filepath.IsAbs(w) {
					t.Errorf("%s is not absolute", w)
				}
				names = append(names, filepath.Base(w))
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("workloadsOf = %v, want %v", names, tc.want)
			}
		})
	}
}

func TestOMBWorkloadTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		want    time.Duration
		wantErr bool
	}{
		// The comparison's workloads: one minute, no warmup.
		{"one minute", "name: w\npayloadFile: payload/none.data\nwarmupDurationMinutes: 0\ntestDurationMinutes: 1\n", time.Minute, false},
		// OMB's own files warm up for a minute and run for fifteen.
		{"warmup", "warmupDurationMinutes: 1\ntestDurationMinutes: 15\n", 16 * time.Minute, false},
		// A workload without a measurement.
		{"no test", "warmupDurationMinutes: 1\n", 0, true},
		// Not YAML.
		{"not yaml", "testDurationMinutes: [", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ombWorkloadTime([]byte(tc.yaml))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ombWorkloadTime = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func FuzzOMBWorkloadTime(f *testing.F) {
	f.Add([]byte("warmupDurationMinutes: 0\ntestDurationMinutes: 1\n"))
	f.Add([]byte("testDurationMinutes: -5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ombWorkloadTime(data)
		if err == nil && (d <= 0 || d > 14*24*time.Hour) {
			t.Fatalf("ombWorkloadTime(%q) = %v", data, d)
		}
	})
}
