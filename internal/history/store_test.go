package history

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// writerEnv, when set to a store path, makes the test binary a writer
// process that adds records until killed (or BROKERBENCH_TEST_N records).
const writerEnv = "BROKERBENCH_TEST_HISTORY_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		n, _ := strconv.Atoi(os.Getenv("BROKERBENCH_TEST_N"))
		s := Open(path)
		for i := 0; n == 0 || i < n; i++ {
			if _, err := s.Add(testRecord(fmt.Sprintf("p%d-%d", os.Getpid(), i), 100)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testRecord is a record of the "quick" benchmark on kafka publishing at
// rate msg/s.
func testRecord(id string, rate float64) Record {
	return Record{
		ID: id, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Origin: "brokerbench",
		Workload: "quick", Broker: "kafka", Benchmark: "b1", Env: Env{Nodes: 1, BrokerVersion: "4.1.0"},
		Settings: map[string]string{"producer/linger.ms": "5"},
		Figures:  map[string]float64{"publishRate": rate, "publish.p99": 2},
		Verdict:  "ok", File: "/results/" + id + ".json",
	}
}

// writerProcess starts this test binary as a writer process of the store
// at path, adding n records (0: until killed).
func writerProcess(t *testing.T, path string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+path, "BROKERBENCH_TEST_N="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func TestAddSkipsKnownIDs(t *testing.T) {
	s := Open(filepath.Join(t.TempDir(), "sub", FileName))
	if c, err := s.Records(); err != nil || len(c.Records) != 0 {
		t.Fatalf("a store not created yet: %v, %v", c, err)
	}
	if n, err := s.Add(testRecord("a", 1), testRecord("b", 2)); err != nil || n != 2 {
		t.Fatalf("Add = %d, %v", n, err)
	}
	// An import of the same runs again adds only the new one.
	if n, err := s.Add(testRecord("b", 2), testRecord("c", 3)); err != nil || n != 1 {
		t.Fatalf("Add again = %d, %v", n, err)
	}
	if _, err := s.Add(Record{}); err == nil {
		t.Error("a record without an id was added")
	}
	c, err := s.Records()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range c.Records {
		ids = append(ids, r.ID)
		if r.Version != Version {
			t.Errorf("record %s has version %d", r.ID, r.Version)
		}
	}
	if fmt.Sprint(ids) != "[a b c]" {
		t.Errorf("ids = %v", ids)
	}
	if r, err := c.Get("c"); err != nil || r.Figures["publishRate"] != 3 {
		t.Errorf("Get(c) = %v, %v", r, err)
	}
	if _, err := c.Get("zzzz"); err == nil {
		t.Error("Get of an unknown id found one")
	}
}

// TestConcurrentWriters adds records from goroutines and from two other
// processes at once: every record is there, and no line is damaged.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	procs := []*exec.Cmd{writerProcess(t, path, 50), writerProcess(t, path, 50)}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			s := Open(path)
			for i := range 25 {
				if _, err := s.Add(testRecord(fmt.Sprintf("g%d-%d", g, i), 1)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	c, err := Open(path).Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 200 || c.Damaged != 0 {
		t.Errorf("%d records, %d damaged lines; want 200 and 0", len(c.Records), c.Damaged)
	}
}

// TestKilledWriter kills a writer process in the middle of its appends,
// then tears a line by hand as a kill can: the store reads, and the next
// record is whole.
func TestKilledWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	p := writerProcess(t, path, 0)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, _ := Open(path).Records(); c != nil && len(c.Records) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer process wrote nothing")
		}
	}
	_ = p.Process.Kill()
	_ = p.Wait()
	before, err := Open(path).Records()
	if err != nil || before.Damaged > 1 {
		t.Fatalf("after the kill: %v damaged lines, %v", before.Damaged, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"v":1,"id":"torn","time":"2026-01-0`)
	f.Close()
	if _, err := Open(path).Add(testRecord("after", 1)); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path).Records()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("after"); err != nil {
		t.Errorf("the record after a torn line: %v", err)
	}
	if len(c.Records) != len(before.Records)+1 || c.Damaged != before.Damaged+1 {
		t.Errorf("%d records and %d damaged lines, want %d and %d", len(c.Records), c.Damaged, len(before.Records)+1, before.Damaged+1)
	}
}

// TestReadsVersion1 reads a store written by version 1 of the format
// (testdata/v1.jsonl, kept as written): every later version must read it.
// A record of a version newer than this build is skipped and counted.
func TestReadsVersion1(t *testing.T) {
	data, err := os.ReadFile("testdata/v1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), FileName)
	newer := fmt.Sprintf(`{"v":%d,"id":"from-the-future","figures":{}}`+"\n", Version+1)
	if err := os.WriteFile(path, append(data, newer...), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(path).Records()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 2 || c.Newer != 1 || c.Damaged != 0 {
		t.Fatalf("%d records, %d newer, %d damaged; want 2, 1, 0", len(c.Records), c.Newer, c.Damaged)
	}
	r := c.Records[1]
	if r.Workload != "quick" || r.Env.Nodes != 3 || r.Figures["e2e.p99"] != 4.5 || r.Settings["producer/acks"] != "all" || r.Labels["ci"] != "nightly" {
		t.Errorf("version 1 record read as %+v", r)
	}
}

// BenchmarkAdd appends one record to a store of 1000.
func BenchmarkAdd(b *testing.B) {
	s := Open(filepath.Join(b.TempDir(), FileName))
	fill(b, s, 1000)
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Add(realisticRecord(fmt.Sprintf("add-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecords reads a store of 5000 records, as every query does.
func BenchmarkRecords(b *testing.B) {
	s := Open(filepath.Join(b.TempDir(), FileName))
	fill(b, s, 5000)
	b.ResetTimer()
	for range b.N {
		if c, err := s.Records(); err != nil || len(c.Records) != 5000 {
			b.Fatal(err)
		}
	}
	if fi, err := os.Stat(s.Path); err == nil {
		b.ReportMetric(float64(fi.Size())/5000, "B/record")
	}
}

func fill(b *testing.B, s *Store, n int) {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = realisticRecord(fmt.Sprintf("run-%d", i))
	}
	if _, err := s.Add(recs...); err != nil {
		b.Fatal(err)
	}
}

// realisticRecord has as many settings and figures as a Kafka run's.
func realisticRecord(id string) Record {
	r := testRecord(id, 1000)
	for i := range 40 {
		r.Settings[fmt.Sprintf("producer/setting.%d", i)] = "some value"
	}
	for _, p := range []string{"publish", "service", "e2e", "sendLag"} {
		for _, q := range []string{"mean", "p50", "p95", "p99", "p99.9", "max"} {
			r.Figures[p+"."+q] = 1.2345
		}
	}
	r.Env = Env{BrokerVersion: "4.1.0", Nodes: 3, BrokerbenchVersion: "v0.9.0", BrokerbenchCommit: "7b3ab24c0ffee", GoVersion: "go1.26.8",
		Hostname: "bench-1", CPUModel: "AMD EPYC 7B13", CPUCores: 2, MemoryBytes: 8 << 30, OS: "linux", Kernel: "6.8.0", Arch: "amd64"}
	return r
}
