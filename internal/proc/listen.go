package proc

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// tcpListen is the state /proc/net/tcp gives a listening socket.
const tcpListen = 0x0A

// Listeners returns, for each of addrs, the PIDs of the processes that
// listen for TCP connections there, in ascending order: a socket bound to
// the address itself or to the wildcard address on its port ("::" takes
// IPv4 connections too, as Linux's sockets do unless they ask not to). It
// reads the listening sockets of this process's network namespace, and
// finds their processes by their file descriptors; processes whose file
// descriptors this process may not read (another user's) are not found,
// so an address may have none. It only reads.
func Listeners(addrs []netip.AddrPort) [][]int { return listeners("/proc", addrs) }

func listeners(root string, addrs []netip.AddrPort) [][]int {
	out := make([][]int, len(addrs))
	// at holds, for each listening socket's inode, the indices of the
	// addresses it listens at.
	at := map[uint64][]int{}
	for _, file := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(root, "net", file))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			local, state, inode, ok := parseSocketLine(line)
			if !ok || state != tcpListen || inode == 0 {
				continue // the header, or not a listening socket
			}
			for i, a := range addrs {
				if listensAt(local, a) {
					at[inode] = append(at[inode], i)
				}
			}
		}
	}
	if len(at) == 0 {
		return out
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(root, e.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // another user's process, or one that exited
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err != nil || !strings.HasPrefix(target, "socket:[") || !strings.HasSuffix(target, "]") {
				continue
			}
			inode, err := strconv.ParseUint(target[len("socket:["):len(target)-1], 10, 64)
			if err != nil {
				continue
			}
			for _, i := range at[inode] {
				if !slices.Contains(out[i], pid) {
					out[i] = append(out[i], pid)
				}
			}
		}
	}
	for _, pids := range out {
		slices.Sort(pids)
	}
	return out
}

// listensAt reports whether a socket bound to local takes connections to
// addr.
func listensAt(local, addr netip.AddrPort) bool {
	if local.Port() != addr.Port() {
		return false
	}
	l, a := local.Addr().Unmap(), addr.Addr().Unmap()
	if l == a {
		return true
	}
	return l.IsUnspecified() && (l.Is6() || a.Is4())
}

// parseSocketLine reads a line of /proc/net/tcp or /proc/net/tcp6: the
// socket's local address, its state and its inode; false for the header
// and for anything else that is not such a line.
func parseSocketLine(line string) (local netip.AddrPort, state uint8, inode uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
		return netip.AddrPort{}, 0, 0, false
	}
	hexAddr, hexPort, found := strings.Cut(f[1], ":")
	if !found {
		return netip.AddrPort{}, 0, 0, false
	}
	addr, ok := parseSocketAddr(hexAddr)
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil {
		return netip.AddrPort{}, 0, 0, false
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return netip.AddrPort{}, 0, 0, false
	}
	inode, err = strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return netip.AddrPort{}, 0, 0, false
	}
	return netip.AddrPortFrom(addr, uint16(port)), uint8(st), inode, true
}

// parseSocketAddr reads an address as the kernel prints it in
// /proc/net/tcp{,6}: each 32-bit word of the address in network byte
// order, printed as a number of the machine's byte order (127.0.0.1 is
// 0100007F on a little-endian machine).
func parseSocketAddr(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(b[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr, true
}

// Name returns the command name the kernel keeps for pid (its
// executable's base name, at most 15 bytes), or "" if pid is not a
// process. Anyone may read it.
func Name(pid int) string {
	comm, err := os.ReadFile(path(pid, "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(comm), "\n")
}
