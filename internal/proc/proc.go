// Package proc reads processes' state from Linux's /proc: whether a PID is
// a live process, what it runs, and which processes listen at a TCP
// address. A process that exited but was not reaped (a zombie, common
// where PID 1 does not reap orphans) still answers kill(pid, 0); it is
// not live here.
package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

func path(pid int, name string) string { return "/proc/" + strconv.Itoa(pid) + "/" + name }

// Live reports whether pid is a process that exists and is neither a
// zombie nor dead.
func Live(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(path(pid, "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold
	// spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// CommandLineHas reports whether pid's command line contains s.
func CommandLineHas(pid int, s string) bool {
	cmdline, err := os.ReadFile(path(pid, "cmdline"))
	return err == nil && bytes.Contains(cmdline, []byte(s))
}

// Unnamed reports whether pid is a live user process whose command line
// reads empty. That happens in two short windows: right after exec, before
// the kernel's ELF loader has set up the new program's arguments (the
// parent's exec call has already returned by then), and while a process
// exits. Kernel threads, which never have a command line, have no
// executable and are not unnamed.
func Unnamed(pid int) bool {
	cmdline, err := os.ReadFile(path(pid, "cmdline"))
	if err != nil || len(cmdline) > 0 || !Live(pid) {
		return false
	}
	_, err = Executable(pid)
	return err == nil
}

// Executable returns the path of the program pid runs.
func Executable(pid int) (string, error) {
	exe, err := os.Readlink(path(pid, "exe"))
	return strings.TrimSuffix(exe, " (deleted)"), err
}

// WithEnv returns the live processes whose environment holds the entry
// kv ("NAME=value") exactly. Daemons a process forks (and their children)
// inherit its environment, so an entry set when a process is started
// finds everything it left running, whatever their command lines. Only
// processes whose environment this process may read are seen.
func WithEnv(kv string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(kv)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(path(pid, "environ"))
		if err != nil || !Live(pid) {
			continue
		}
		for _, entry := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(entry, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// StartTime returns when pid started, in clock ticks since the machine
// booted (0 if pid is not a process): with the PID, it names one process,
// not whichever later reuses the PID.
func StartTime(pid int) uint64 {
	stat, err := os.ReadFile(path(pid, "stat"))
	if err != nil {
		return 0
	}
	// The fields after the parenthesised command name: state is the
	// first, start time the twentieth.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return 0
	}
	t, _ := strconv.ParseUint(fields[19], 10, 64)
	return t
}
