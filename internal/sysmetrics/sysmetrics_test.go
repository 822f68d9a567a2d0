package sysmetrics

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// fakeProc writes a /proc and /sys tree with the given counters.
func fakeProc(t *testing.T, root string, user, system, idle, iowait, sectorsRead, sectorsWritten, rx, tx, procTicks, rssPages uint64) {
	t.Helper()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/stat", fmt.Sprintf("cpu  %d 0 %d %d %d 0 0 0 0 0\ncpu0 1 2 3 4\n", user, system, idle, iowait))
	write("proc/diskstats", fmt.Sprintf(
		"   8       0 sda 10 0 %d 0 20 0 %d 0 0 0 0\n   8       1 sda1 10 0 999999 0 20 0 999999 0 0 0 0\n   7       0 loop0 1 0 777 0 1 0 777 0 0 0 0\n", sectorsRead, sectorsWritten))
	write("sys/block/sda/size", "1\n")
	write("proc/net/dev", fmt.Sprintf("Inter-|   Receive |  Transmit\n face |bytes packets|bytes\n    lo: %d 1 0 0 0 0 0 0 %d 1 0 0 0 0 0 0\n", rx, tx))
	// pid 42: "(name with) spaces" exercises the parenthesis handling.
	write("proc/42/stat", fmt.Sprintf("42 (java (x) y) S 1 1 1 0 -1 0 0 0 0 0 %d %d 0 0 20 0 50 0 100 1000 %d 0 0\n", procTicks/2, procTicks-procTicks/2, rssPages))
}

func TestSampleRates(t *testing.T) {
	// In a bubble, the clock stands still while the test works: the
	// sample's interval is the 2 s set, however slow the machine.
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		fakeProc(t, root, 100, 50, 800, 50, 0, 0, 0, 0, 0, 1000)
		s := &Sampler{procRoot: filepath.Join(root, "proc"), sysRoot: filepath.Join(root, "sys"), clientPID: 42, brokers: []Node{{ID: 1, PID: 42}, {ID: 2, PID: 42}, {ID: 3, PID: 99}}}
		s.last = s.read()
		s.last.at = s.last.at.Add(-2 * time.Second) // two seconds ago
		// In 2 s on 2 cores (400 ticks): 100 user, 40 system, 60 iowait, 200
		// idle; 4 MB read and 8 MB written; 20 MB received; the process used
		// 150 ticks (75% of a core).
		fakeProc(t, root, 200, 90, 1000, 110, 8192, 16384, 20e6, 10e6, 150, 2000)
		got := s.Sample()
		if got == nil {
			t.Fatal("no sample")
		}
		near := func(name string, v, want float64) {
			t.Helper()
			if math.Abs(v-want) > 0.05*math.Max(1, want) {
				t.Errorf("%s = %.3f, want %.3f", name, v, want)
			}
		}
		near("user %", got.CPUUser, 25)
		near("system %", got.CPUSystem, 10)
		near("iowait %", got.CPUIowait, 15)
		near("idle %", got.CPUIdle, 50)
		near("disk read MB/s", got.DiskReadMBps, 8192*512/2/1e6)
		near("disk write MB/s", got.DiskWriteMBps, 16384*512/2/1e6)
		near("net rx MB/s", got.NetRxMBps, 10)
		near("net tx MB/s", got.NetTxMBps, 5)
		// Nodes 1 and 2 are the same fake process; node 3 has none and is
		// left out. The broker's figures sum over its nodes.
		rss := float64(2000*os.Getpagesize()) / (1 << 20)
		near("broker CPU %", got.BrokerCPU, 150)
		near("broker RSS MB", got.BrokerRSSMB, 2*rss)
		if !got.BrokerSampled || len(got.BrokerNodes) != 2 || got.BrokerNodes[1].ID != 2 {
			t.Fatalf("broker nodes %+v: want nodes 1 and 2 sampled", got.BrokerNodes)
		}
		near("node 1 CPU %", got.BrokerNodes[0].CPU, 75)
		near("node 2 RSS MB", got.BrokerNodes[1].RSSMB, rss)
	})
}

// TestSampleThisProcess samples the real /proc while this process burns CPU.
func TestSampleThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Busy until this process has used 200 ms of CPU (by its own
	// rusage), however long a busy machine makes that take: the share
	// sampled is then compared with what the process used, not with what
	// the machine let it have.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s := New(nil)
	began, used0 := time.Now(), cpu()
	x := 0
	for cpu()-used0 < 200*time.Millisecond && time.Since(began) < 20*time.Second {
		x++
	}
	got := s.Sample()
	if got == nil {
		t.Fatal("no sample from /proc")
	}
	want := 100 * (cpu() - used0).Seconds() / time.Since(began).Seconds() // % of a core
	if got.ClientCPU < want/2 || got.ClientCPU > want*1.5+5 || got.ClientRSSMB <= 0 || got.BrokerSampled {
		t.Errorf("sample %+v after a busy loop (%d turns) that used %.0f%% of a core", got, x, want)
	}
	// With steal, the shares are the whole of the machine's time (nice
	// is in user, interrupts in system).
	if sum := got.CPUUser + got.CPUSystem + got.CPUIowait + got.CPUIdle + got.CPUSteal; sum < 99 || sum > 101 {
		t.Errorf("CPU shares with steal sum to %.1f%%, want 100", sum)
	}
}

// TestOtherProcessesAndSteal: the machine's busy time not accounted for by
// brokerbench (its own process and the worker processes it started, which
// run its executable), the broker nodes and the link proxy is other
// processes' work; steal is kept apart; a child running another program is
// not brokerbench's.
func TestOtherProcessesAndSteal(t *testing.T) {
	// In a bubble, the clock stands still while the test works: the
	// sample's interval is the 2 s set, however slow the machine.
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		proc, write, link := procFiles(t, root)
		stat := func(pid, ppid int, ticks uint64) string {
			return fmt.Sprintf("%d (x) S %d 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 100 1000 10 0 0\n", pid, ppid, ticks)
		}
		// user nice system idle iowait irq softirq steal
		state := func(user, idle, steal, client, broker, worker, stranger uint64) {
			write("stat", fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 %d 0 0\ncpu0 1\ncpu1 1\n", user, idle, steal))
			write("42/stat", stat(42, 1, client))
			write("43/stat", stat(43, 1, broker))
			write("44/stat", stat(44, 42, worker))
			write("45/stat", stat(45, 42, stranger))
		}
		link("42", "/opt/brokerbench")
		link("44", "/opt/brokerbench") // a worker brokerbench started
		link("45", "/usr/bin/sh")      // a child running something else
		state(0, 0, 0, 0, 0, 0, 0)
		s := &Sampler{procRoot: proc, sysRoot: filepath.Join(root, "sys"), clientPID: 42, brokers: []Node{{ID: 1, PID: 43}}}
		s.last = s.read()
		s.last.at = s.last.at.Add(-2 * time.Second)
		// In 2 s on 2 cores (400 ticks): 320 busy, 60 idle, 20 stolen. The
		// client used 150 ticks (75% of a core), its worker 40 (20%), the
		// broker 100 (50%), the shell child 10: the others used 160% - 95% -
		// 50% = 15% of a core, the shell child among them.
		state(320, 60, 20, 150, 100, 40, 10)
		got := s.Sample()
		if got == nil {
			t.Fatal("no sample")
		}
		near := func(name string, v, want float64) {
			t.Helper()
			if math.Abs(v-want) > 0.5 {
				t.Errorf("%s = %.2f, want %.2f", name, v, want)
			}
		}
		near("client CPU", got.ClientCPU, 95)
		near("broker CPU", got.BrokerCPU, 50)
		near("other CPU", got.OtherCPU, 15)
		near("steal %", got.CPUSteal, 5)
		if got.Cores != 2 {
			t.Errorf("cores %d, want 2", got.Cores)
		}
	})
}

// TestHelpersAreTheClientsChildren: the client's helpers are its child
// processes running its own executable, found from its threads' children
// lists where the kernel keeps them, and by reading every process's stat
// where it does not.
func TestHelpersAreTheClientsChildren(t *testing.T) {
	root := t.TempDir()
	proc, write, link := procFiles(t, root)
	stat := func(pid, ppid string, ticks int) string {
		return fmt.Sprintf("%s (bb) S %s 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0 5 0 100 1000 10 0 0\n", pid, ppid, ticks)
	}
	write("42/stat", stat("42", "1", 100))
	link("42", "/opt/brokerbench")
	write("43/stat", stat("43", "42", 7)) // a worker
	link("43", "/opt/brokerbench")
	write("44/stat", stat("44", "42", 9)) // a child running something else
	link("44", "/usr/bin/java")
	write("45/stat", stat("45", "42", 11)) // a worker in no children list
	link("45", "/opt/brokerbench")
	s := &Sampler{procRoot: proc, clientPID: 42}

	// Without children lists, every process is read: 43 and 45.
	if got := s.readHelpers(); len(got) != 2 || got[43] != 7 || got[45] != 11 {
		t.Errorf("helpers without children lists = %v, want 43:7 and 45:11", got)
	}
	// With them, only the children listed are read.
	write("42/task/42/children", "43 44 ")
	write("42/task/50/children", "")
	if got := s.readHelpers(); len(got) != 1 || got[43] != 7 {
		t.Errorf("helpers from children lists = %v, want 43:7 alone", got)
	}
}

// procFiles is a /proc of files under root: write puts text in the file
// rel under it, link makes a process's exe link point at target.
func procFiles(t *testing.T, root string) (proc string, write func(rel, text string), link func(pid, target string)) {
	proc = filepath.Join(root, "proc")
	write = func(rel, text string) {
		t.Helper()
		p := filepath.Join(proc, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link = func(pid, target string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(proc, pid, "exe")); err != nil {
			t.Fatal(err)
		}
	}
	return proc, write, link
}
