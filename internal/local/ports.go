package local

import (
	"fmt"
	"net"
	"strconv"
)

// portFree reports whether nothing listens on host:port and it can be
// bound; host "" is every address.
func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// allocatePort returns preferred if it is free on host ("": every
// address; preferred 0: no preference), else a port the system picks as
// free there. taken says which ports are already handed out, to be
// skipped though not yet bound.
func allocatePort(host string, preferred int, taken func(port int) bool) (int, error) {
	if preferred > 0 && !taken(preferred) && portFree(host, preferred) {
		return preferred, nil
	}
	for range 100 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port on %s: %w", host, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !taken(port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free port on %s: every port offered was taken", host)
}
