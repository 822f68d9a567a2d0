// Package sysmetrics samples the machine's and chosen processes' resource
// use from Linux's /proc: CPU time split into user, system, iowait and idle,
// disk and network bytes, and each process's CPU and resident memory.
// Consecutive samples become rates over the time between them.
package sysmetrics

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brokerbench/brokerbench/internal/results"
)

// clockTicks is USER_HZ, the unit of /proc CPU times; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// Sampler turns /proc readings into per-interval rates. It is not safe for
// concurrent use. On systems without /proc it samples nothing.
type Sampler struct {
	procRoot  string
	sysRoot   string
	clientPID int
	brokers   []Node
	last      *snapshot
}

// Node is a broker process to sample: its node id and PID.
type Node struct {
	ID, PID int
	// LinkProxy marks the process carrying the cluster's links: sampled
	// apart from the brokers.
	LinkProxy bool
}

// New returns a sampler of this process (the client) and of the broker
// nodes' processes (none for a broker elsewhere). It takes a first reading
// at once.
func New(brokers []Node) *Sampler {
	s := &Sampler{procRoot: "/proc", sysRoot: "/sys", clientPID: os.Getpid(), brokers: brokers}
	s.last = s.read()
	return s
}

type snapshot struct {
	at                   time.Time
	user, system, iowait uint64 // all cores, clock ticks
	idle, steal, total   uint64
	cores                int    // CPUs listed in /proc/stat
	diskRead, diskWrite  uint64 // bytes
	netRx, netTx         uint64 // bytes
	clientCPU, clientRSS uint64 // clock ticks, bytes
	clientOK, ok         bool
	nodes                []procReading // one per Sampler.brokers
	// helpers are the client's child processes running the client's own
	// executable (worker processes it started): CPU ticks by PID.
	helpers map[int]uint64
}

// procReading is one process's CPU time (clock ticks) and resident memory.
type procReading struct {
	cpu, rss uint64
	ok       bool
}

// Sample returns the resource use since the previous call (or since New);
// nil where /proc cannot be read.
func (s *Sampler) Sample() *results.System {
	cur := s.read()
	prev := s.last
	s.last = cur
	if !cur.ok || !prev.ok {
		return nil
	}
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		return nil
	}
	pct := func(a, b uint64) float64 {
		total := float64(cur.total - prev.total)
		if total <= 0 || a < b {
			return 0
		}
		return float64(a-b) / total * 100
	}
	rate := func(a, b uint64) float64 {
		if a < b {
			return 0
		}
		return float64(a-b) / secs / 1e6
	}
	sys := &results.System{
		CPUUser: pct(cur.user, prev.user), CPUSystem: pct(cur.system, prev.system),
		CPUIowait: pct(cur.iowait, prev.iowait), CPUIdle: pct(cur.idle, prev.idle),
		DiskReadMBps: rate(cur.diskRead, prev.diskRead), DiskWriteMBps: rate(cur.diskWrite, prev.diskWrite),
		NetRxMBps: rate(cur.netRx, prev.netRx), NetTxMBps: rate(cur.netTx, prev.netTx),
		Cores: cur.cores, CPUSteal: pct(cur.steal, prev.steal),
	}
	procCPU := func(a, b uint64) float64 {
		if a < b {
			return 0
		}
		return float64(a-b) / clockTicks / secs * 100
	}
	if cur.clientOK && prev.clientOK {
		sys.ClientCPU, sys.ClientRSSMB = procCPU(cur.clientCPU, prev.clientCPU), float64(cur.clientRSS)/(1<<20)
		// Worker processes the client started are the load generator
		// too; one started since the last sample counts from its start.
		for pid, ticks := range cur.helpers {
			sys.ClientCPU += procCPU(ticks, prev.helpers[pid])
		}
	}
	for i, n := range s.brokers {
		c, p := cur.nodes[i], prev.nodes[i]
		if !c.ok || !p.ok {
			continue
		}
		if n.LinkProxy {
			sys.LinkProxyCPU = procCPU(c.cpu, p.cpu)
			continue
		}
		ns := results.NodeSystem{ID: n.ID, CPU: procCPU(c.cpu, p.cpu), RSSMB: float64(c.rss) / (1 << 20)}
		sys.BrokerNodes = append(sys.BrokerNodes, ns)
		sys.BrokerCPU += ns.CPU
		sys.BrokerRSSMB += ns.RSSMB
		sys.BrokerSampled = true
	}
	// What the machine's CPUs did beyond idling, waiting for I/O and being
	// taken by the hypervisor, minus what the sampled processes account
	// for, is the work of every other process (and of the kernel on no
	// process's behalf).
	busy := float64(0)
	if b, pb := cur.total-cur.idle-cur.iowait-cur.steal, prev.total-prev.idle-prev.iowait-prev.steal; b > pb {
		busy = float64(b-pb) / clockTicks / secs * 100
	}
	sys.OtherCPU = max(0, busy-sys.ClientCPU-sys.BrokerCPU-sys.LinkProxyCPU)
	return sys
}

func (s *Sampler) read() *snapshot {
	sn := &snapshot{at: time.Now()}
	sn.ok = s.readCPU(sn) == nil
	s.readDisks(sn)
	s.readNet(sn)
	sn.clientCPU, sn.clientRSS, sn.clientOK = s.readProc(s.clientPID)
	sn.helpers = s.readHelpers()
	for _, n := range s.brokers {
		var r procReading
		r.cpu, r.rss, r.ok = s.readProc(n.PID)
		sn.nodes = append(sn.nodes, r)
	}
	return sn
}

// readCPU reads the aggregate "cpu" line of /proc/stat.
func (s *Sampler) readCPU(sn *snapshot) error {
	data, err := os.ReadFile(filepath.Join(s.procRoot, "stat"))
	if err != nil {
		return err
	}
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	sn.cores = 0
	for _, l := range bytes.Split(rest, []byte("\n")) {
		if len(l) > 3 && bytes.HasPrefix(l, []byte("cpu")) && l[3] >= '0' && l[3] <= '9' {
			sn.cores++
		}
	}
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return os.ErrInvalid
	}
	var v [10]uint64
	for i := 1; i < len(f) && i <= 10; i++ {
		v[i-1], _ = strconv.ParseUint(f[i], 10, 64)
	}
	// user nice system idle iowait irq softirq steal guest guest_nice;
	// guest time is already counted in user.
	sn.user, sn.system, sn.idle, sn.iowait, sn.steal = v[0]+v[1], v[2]+v[5]+v[6], v[3], v[4], v[7]
	sn.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
	return nil
}

// readDisks sums sectors read and written over whole disks (not
// partitions, loop or RAM devices).
func (s *Sampler) readDisks(sn *snapshot) {
	f, err := os.Open(filepath.Join(s.procRoot, "diskstats"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 {
			continue
		}
		name := fl[2]
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.sysRoot, "block", name)); err != nil {
			continue // a partition, or not a block device we can place
		}
		read, _ := strconv.ParseUint(fl[5], 10, 64)
		written, _ := strconv.ParseUint(fl[9], 10, 64)
		sn.diskRead += read * 512
		sn.diskWrite += written * 512
	}
}

// readNet sums bytes received and sent over every interface, loopback
// included (a local broker's traffic is on loopback).
func (s *Sampler) readNet(sn *snapshot) {
	f, err := os.Open(filepath.Join(s.procRoot, "net", "dev"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fl := strings.Fields(rest)
		if len(fl) < 9 {
			continue
		}
		rx, _ := strconv.ParseUint(fl[0], 10, 64)
		tx, _ := strconv.ParseUint(fl[8], 10, 64)
		sn.netRx += rx
		sn.netTx += tx
	}
}

// readHelpers returns the CPU ticks of the client's child processes that
// run the client's own executable: the worker processes of a run spread
// over local workers, which are brokerbench as much as the client is.
func (s *Sampler) readHelpers() map[int]uint64 {
	self, err := os.Readlink(filepath.Join(s.procRoot, strconv.Itoa(s.clientPID), "exe"))
	if err != nil {
		return nil
	}
	pids, ok := s.children()
	if !ok {
		if pids, ok = s.allPIDs(); !ok {
			return nil
		}
	}
	var out map[int]uint64
	for _, pid := range pids {
		if pid == s.clientPID {
			continue
		}
		f, ok := s.statFields(pid)
		if !ok || len(f) < 22 || f[1] != strconv.Itoa(s.clientPID) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join(s.procRoot, strconv.Itoa(pid), "exe")); err != nil || exe != self {
			continue
		}
		utime, _ := strconv.ParseUint(f[11], 10, 64)
		stime, _ := strconv.ParseUint(f[12], 10, 64)
		if out == nil {
			out = map[int]uint64{}
		}
		out[pid] = utime + stime
	}
	return out
}

// children returns the PIDs of the client's child processes, from each
// of its threads' task/TID/children: a few small reads, where reading
// every process's stat took milliseconds a sample on a machine with a few
// hundred processes. It returns false where the kernel keeps no such
// file (CONFIG_PROC_CHILDREN).
func (s *Sampler) children() ([]int, bool) {
	tasks := filepath.Join(s.procRoot, strconv.Itoa(s.clientPID), "task")
	entries, err := os.ReadDir(tasks)
	if err != nil {
		return nil, false
	}
	var pids []int
	for _, e := range entries {
		list, err := os.ReadFile(filepath.Join(tasks, e.Name(), "children"))
		if err != nil {
			return nil, false
		}
		for _, f := range strings.Fields(string(list)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}

// allPIDs returns the PID of every process.
func (s *Sampler) allPIDs() ([]int, bool) {
	entries, err := os.ReadDir(s.procRoot)
	if err != nil {
		return nil, false
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// statFields returns the fields of /proc/PID/stat after the command name
// (which is in parentheses and may hold spaces): state is [0], the parent
// PID [1], utime [11], stime [12], rss in pages [21].
func (s *Sampler) statFields(pid int) ([]string, bool) {
	stat, err := os.ReadFile(filepath.Join(s.procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(stat[i+1:])), true
}

// readProc returns a process's CPU time (user + system, clock ticks) and
// resident memory.
func (s *Sampler) readProc(pid int) (cpu, rss uint64, ok bool) {
	f, ok := s.statFields(pid)
	if !ok || len(f) < 22 {
		return 0, 0, false
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	pages, _ := strconv.ParseUint(f[21], 10, 64)
	return utime + stime, pages * uint64(os.Getpagesize()), true
}
