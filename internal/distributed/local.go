package distributed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// LocalWorkers are worker processes started on this machine, each on a
// loopback address of its own (127.1.i.1) and a port of its choosing.
type LocalWorkers struct {
	// URLs are the workers' base URLs, in order.
	URLs  []string
	procs []localWorker
}

type localWorker struct {
	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}
}

// StartLocal starts n workers by running exe with the arguments 'worker
// --listen 127.1.i.1:0 --exit-with-stdin' and returns once every one
// serves. A worker whose standard input closes exits, so none outlives
// this process. Their output goes to log (nil discards it).
func StartLocal(exe string, n int, log io.Writer) (*LocalWorkers, error) {
	if n < 1 || n > 256 {
		return nil, fmt.Errorf("%d local workers: give 1 to 256", n)
	}
	if log == nil {
		log = io.Discard
	}
	l := &LocalWorkers{}
	for i := range n {
		u, err := l.start(exe, fmt.Sprintf("127.1.%d.1:0", i), log)
		if err != nil {
			l.Stop()
			return nil, fmt.Errorf("local worker %d: %w", i+1, err)
		}
		l.URLs = append(l.URLs, u)
	}
	return l, nil
}

// serving is what a worker prints once it serves: "... on http://ADDR/v1".
const serving = "worker: serving "

func (l *LocalWorkers) start(exe, addr string, log io.Writer) (string, error) {
	cmd := exec.Command(exe, "worker", "--listen", addr, "--exit-with-stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	w := localWorker{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	l.procs = append(l.procs, w)
	found := make(chan string, 1)
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.HasPrefix(line, serving) {
				if _, url, ok := strings.Cut(line, " on "); ok {
					found <- strings.TrimSuffix(url, APIPrefix)
					sent = true
				}
			}
			fmt.Fprintf(log, "[worker %s] %s\n", addr, line)
		}
		_ = cmd.Wait()
	}()
	select {
	case u := <-found:
		return u, nil
	case <-w.done:
		return "", errors.New("exited before serving")
	case <-time.After(20 * time.Second):
		return "", errors.New("not serving within 20 s")
	}
}

// Stop stops every worker by its PID: SIGTERM, and SIGKILL for one still
// running after 10 s.
func (l *LocalWorkers) Stop() {
	for _, w := range l.procs {
		_ = w.stdin.Close()
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range l.procs {
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	}
	l.procs = nil
}
