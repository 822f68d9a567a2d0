package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KafkaVersion is the Apache Kafka release brokerbench installs.
const KafkaVersion = "4.3.1"

// log4jVersion is the log4j2 binding matching Kafka's slf4j 1.7 API.
const log4jVersion = "2.24.3"

// ErrPrerequisite reports a missing tool needed to install a broker.
var ErrPrerequisite = errors.New("missing prerequisite")

// Kafka is a single-node Apache Kafka broker in KRaft mode (combined broker
// and controller, no ZooKeeper) listening on 127.0.0.1.
type Kafka struct {
	// CacheDir holds the downloaded jars, shared by every state directory.
	CacheDir string
	// StateDir holds this broker's data, logs, config and PID file.
	StateDir string
	// Port is the client port; the controller uses Port+1.
	Port int
	// AdvertisedPort, if not zero, is the port on 127.0.0.1 the broker tells
	// clients to connect to instead of Port: a proxy in front of it.
	AdvertisedPort int
	// HeapMB is the broker JVM heap size.
	HeapMB int
	// Log receives progress messages; nil discards them.
	Log io.Writer
}

// NewKafka returns a Kafka on port with default directories and heap.
func NewKafka(port int) *Kafka {
	return &Kafka{CacheDir: DefaultCacheDir(), StateDir: filepath.Join(DefaultStateDir(), fmt.Sprintf("kafka-%d", port)), Port: port, HeapMB: 1024}
}

// Address returns the broker's bootstrap address.
func (k *Kafka) Address() string { return fmt.Sprintf("127.0.0.1:%d", k.Port) }

// LibDir returns the directory holding the Kafka jars.
func (k *Kafka) LibDir() string { return filepath.Join(k.CacheDir, "kafka-"+KafkaVersion, "lib") }

func (k *Kafka) pidFile() string    { return filepath.Join(k.StateDir, "kafka.pid") }
func (k *Kafka) logFile() string    { return filepath.Join(k.StateDir, "kafka.log") }
func (k *Kafka) dataDir() string    { return filepath.Join(k.StateDir, "data") }
func (k *Kafka) configFile() string { return filepath.Join(k.StateDir, "server.properties") }

func (k *Kafka) logf(format string, args ...any) {
	if k.Log != nil {
		fmt.Fprintf(k.Log, format+"\n", args...)
	}
}

// Install downloads the pinned Kafka release and its dependencies from Maven
// Central into CacheDir, unless already there. It needs Java 17+ and Maven.
func (k *Kafka) Install(ctx context.Context) error {
	if err := checkJava(ctx); err != nil {
		return err
	}
	dist := filepath.Dir(k.LibDir())
	done := filepath.Join(dist, ".complete")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return fmt.Errorf("%w: Maven (mvn) is needed to download Kafka %s from Maven Central: install it (Debian: apt-get install maven)", ErrPrerequisite, KafkaVersion)
	}
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dist, err)
	}
	if err := os.WriteFile(filepath.Join(dist, "pom.xml"), []byte(kafkaPOM), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "settings.xml"), []byte(mavenSettings), 0o644); err != nil {
		return err
	}
	k.logf("installing Apache Kafka %s from Maven Central into %s (about a minute on first use)", KafkaVersion, dist)
	_ = os.RemoveAll(k.LibDir())
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-s", "settings.xml",
		"dependency:copy-dependencies", "-DoutputDirectory=lib", "-DincludeScope=runtime")
	cmd.Dir = dist
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("download Kafka %s with Maven: %w\n%s", KafkaVersion, err, lastLines(string(out), 20))
	}
	if _, err := os.Stat(filepath.Join(k.LibDir(), "kafka_2.13-"+KafkaVersion+".jar")); err != nil {
		return fmt.Errorf("Maven finished but the Kafka jar is missing in %s", k.LibDir())
	}
	return os.WriteFile(done, []byte(KafkaVersion+"\n"), 0o644)
}

var javaVersionRE = regexp.MustCompile(`version "(\d+)`)

func checkJava(ctx context.Context) error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("%w: Java 17 or newer is needed to run Kafka: install it (Debian: apt-get install openjdk-17-jre-headless)", ErrPrerequisite)
	}
	out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s -version failed: %v", ErrPrerequisite, java, err)
	}
	m := javaVersionRE.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("%w: cannot read the Java version from %q", ErrPrerequisite, lastLines(string(out), 3))
	}
	if v, _ := strconv.Atoi(string(m[1])); v < 17 {
		return fmt.Errorf("%w: Kafka %s needs Java 17 or newer, found Java %d", ErrPrerequisite, KafkaVersion, v)
	}
	return nil
}

// KafkaStatus describes a local broker.
type KafkaStatus struct {
	Running  bool   `json:"running"`
	PID      int    `json:"pid,omitempty"`
	Address  string `json:"address"`
	Version  string `json:"version"`
	LogFile  string `json:"logFile"`
	StateDir string `json:"stateDir"`
}

// marker identifies this broker's process among others with the same PID
// history: its config file path is on its command line.
func (k *Kafka) marker() string { return k.configFile() }

// Status reports whether the broker is running.
func (k *Kafka) Status() KafkaStatus {
	st := KafkaStatus{Address: k.Address(), Version: KafkaVersion, LogFile: k.logFile(), StateDir: k.StateDir}
	if pid, err := readPID(k.pidFile()); err == nil && alive(pid, k.marker()) {
		st.Running, st.PID = true, pid
	}
	return st
}

// Up installs Kafka if needed, formats storage on first use, starts the
// broker and waits until it answers requests. It is a no-op if the broker
// is already running.
func (k *Kafka) Up(ctx context.Context) (KafkaStatus, error) {
	if st := k.Status(); st.Running {
		return st, k.waitReady(ctx, st.PID, 60*time.Second)
	}
	if conn, err := net.DialTimeout("tcp", k.Address(), 500*time.Millisecond); err == nil {
		conn.Close()
		return KafkaStatus{}, fmt.Errorf("port %d: %w", k.Port, ErrPortInUse)
	}
	if err := k.Install(ctx); err != nil {
		return KafkaStatus{}, err
	}
	if err := os.MkdirAll(k.StateDir, 0o755); err != nil {
		return KafkaStatus{}, fmt.Errorf("create %s: %w", k.StateDir, err)
	}
	if err := k.writeConfig(); err != nil {
		return KafkaStatus{}, err
	}
	if _, err := os.Stat(filepath.Join(k.dataDir(), "meta.properties")); err != nil {
		if err := k.format(ctx); err != nil {
			return KafkaStatus{}, err
		}
	}
	pid, err := k.start()
	if err != nil {
		return KafkaStatus{}, err
	}
	k.logf("started Kafka %s on %s (pid %d, log %s)", KafkaVersion, k.Address(), pid, k.logFile())
	if err := k.waitReady(ctx, pid, 90*time.Second); err != nil {
		_ = stopPID(pid, k.marker(), 10*time.Second)
		return KafkaStatus{}, err
	}
	return k.Status(), nil
}

func (k *Kafka) writeConfig() error {
	cfg := fmt.Sprintf(`# Written by brokerbench: single-node KRaft broker on loopback.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[4]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
`, k.Port, k.Port+1, k.dataDir(), cmp.Or(k.AdvertisedPort, k.Port))
	if err := os.WriteFile(k.configFile(), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("write broker config: %w", err)
	}
	log4j := "status = warn\nappender.console.type = Console\nappender.console.name = STDOUT\nappender.console.layout.type = PatternLayout\nappender.console.layout.pattern = [%d] %p %m (%c)%n\nrootLogger.level = info\nrootLogger.appenderRef.stdout.ref = STDOUT\n"
	return os.WriteFile(filepath.Join(k.StateDir, "log4j2.properties"), []byte(log4j), 0o644)
}

func (k *Kafka) javaArgs(class string, args ...string) []string {
	base := []string{
		fmt.Sprintf("-Xms%dm", k.HeapMB), fmt.Sprintf("-Xmx%dm", k.HeapMB),
		"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(k.StateDir, "log4j2.properties"),
		"-cp", filepath.Join(k.LibDir(), "*"), class,
	}
	return append(base, args...)
}

func (k *Kafka) format(ctx context.Context) error {
	idOut, err := exec.CommandContext(ctx, "java", k.toolArgs("kafka.tools.StorageTool", "random-uuid")...).Output()
	if err != nil {
		return fmt.Errorf("generate Kafka cluster id: %w", err)
	}
	id := strings.TrimSpace(lastLines(string(idOut), 1))
	out, err := exec.CommandContext(ctx, "java", k.toolArgs("kafka.tools.StorageTool", "format", "-t", id, "-c", k.configFile())...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("format Kafka storage in %s: %w\n%s", k.dataDir(), err, lastLines(string(out), 10))
	}
	return nil
}

// toolArgs runs a Kafka tool class with a small heap.
func (k *Kafka) toolArgs(class string, args ...string) []string {
	return append([]string{"-Xmx256m", "-Dlog4j2.configurationFile=" + filepath.Join(k.StateDir, "log4j2.properties"),
		"-cp", filepath.Join(k.LibDir(), "*"), class}, args...)
}

// start launches the broker in its own session, so that it outlives the
// command that started it and ignores the terminal's Ctrl-C.
func (k *Kafka) start() (int, error) {
	logf, err := os.OpenFile(k.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open broker log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command("java", k.javaArgs("kafka.Kafka", k.configFile())...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start Kafka: %w", err)
	}
	pid := cmd.Process.Pid
	// Reap the process if it exits while this process still runs, so that it
	// does not linger as a zombie.
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(k.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return pid, fmt.Errorf("write PID file: %w", err)
	}
	return pid, nil
}

// waitReady polls until the broker answers a Kafka request.
func (k *Kafka) waitReady(ctx context.Context, pid int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Address()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		if !alive(pid, k.marker()) {
			return fmt.Errorf("Kafka exited during start-up; last lines of %s:\n%s", k.logFile(), tail(k.logFile(), 15))
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err := cl.Ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Kafka did not accept requests on %s within %s (last error: %v); see %s", k.Address(), limit, err, k.logFile())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Down stops the broker by its PID (SIGTERM, then SIGKILL after 30 s). It is
// a no-op if the broker is not running.
func (k *Kafka) Down() error {
	pid, err := readPID(k.pidFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := stopPID(pid, k.marker(), 30*time.Second); err != nil {
		return err
	}
	k.logf("stopped Kafka (pid %d)", pid)
	return os.Remove(k.pidFile())
}

// Pause stops the broker process with SIGSTOP, for stall tests; Resume
// continues it.
func (k *Kafka) Pause() error { return k.signal(syscall.SIGSTOP) }

// Resume continues a paused broker.
func (k *Kafka) Resume() error { return k.signal(syscall.SIGCONT) }

func (k *Kafka) signal(sig syscall.Signal) error {
	st := k.Status()
	if !st.Running {
		return fmt.Errorf("Kafka on %s is not running", k.Address())
	}
	return syscall.Kill(st.PID, sig)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

const kafkaPOM = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.brokerbench</groupId>
  <artifactId>kafka-dist</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>` + KafkaVersion + `</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>` + KafkaVersion + `</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>` + log4jVersion + `</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>` + log4jVersion + `</version></dependency>
  </dependencies>
</project>
`

// mavenSettings sends every repository but Maven Central to a URL that
// fails at once, so transitive POMs naming unreachable repositories cannot
// stall the download.
const mavenSettings = `<settings>
  <mirrors>
    <mirror><id>central-only</id><mirrorOf>external:*,!central</mirrorOf><url>file:///nonexistent-brokerbench-mirror</url></mirror>
  </mirrors>
</settings>
`
