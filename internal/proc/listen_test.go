package proc

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fixture's /proc/net/tcp and tcp6, as a little-endian machine writes
// them (see parseSocketAddr).
const (
	fixtureTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1001 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:2384 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 1003 1 0000000000000000 20 4 30 10 -1
   3: 0200007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1004 1 0000000000000000 100 0 0 10 0
   4: 0100007F:2387 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 1005 1 0000000000000000 100 0 0 10 0
   5: 0100007F:D432 0100007F:2384 06 00000000:00000000 03:00000A06 00000000     0        0 0 3 0000000000000000
`
	fixtureTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:2385 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:2386 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2003 1 0000000000000000 100 0 0 10 0
`
)

// littleEndian skips t on a machine whose /proc/net/tcp reads otherwise
// than the fixtures.
func littleEndian(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the fixtures are as a little-endian machine writes them")
	}
}

// fixtureProc writes a /proc with the fixture's sockets and processes
// holding them, by PID: file descriptor → link target.
func fixtureProc(t *testing.T, procs map[int]map[string]string) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"tcp": fixtureTCP, "tcp6": fixtureTCP6} {
		if err := os.WriteFile(filepath.Join(root, "net", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for pid, fds := range procs {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if fds != nil {
			dir = filepath.Join(dir, "fd")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for fd, target := range fds {
			if err := os.Symlink(target, filepath.Join(dir, fd)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// TestListenersFixture: each address finds the processes holding a
// socket that listens at it or at the wildcard on its port, IPv4 and
// IPv6; sockets in other states, other ports and other addresses are not
// listeners there.
func TestListenersFixture(t *testing.T) {
	littleEndian(t)
	root := fixtureProc(t, map[int]map[string]string{
		// A broker on 127.0.0.1:9092: its listener twice (dup'd) beside
		// a file.
		10: {"3": "socket:[1001]", "4": "/var/log/broker.log", "5": "socket:[1001]"},
		// A forked worker sharing that listener.
		31: {"7": "socket:[1001]"},
		11: {"3": "socket:[1002]"},            // 0.0.0.0:8080
		12: {"3": "socket:[1003]"},            // a connection from 127.0.0.1:54321 to 9092
		13: {"3": "socket:[1004]"},            // 127.0.0.2:9092
		20: {"3": "socket:[2001]"},            // [::1]:9093
		21: {"3": "socket:[2002]"},            // [::]:8081
		22: {"3": "socket:[2003]"},            // 127.0.0.1:9094 as a Java process binds it, IPv4-mapped
		30: nil,                               // another user's process, fds unreadable (it holds 127.0.0.1:9095)
		40: {"3": "pipe:[1001]", "4": "anon"}, // an inode number that is no socket's
	})
	for _, tc := range []struct {
		addr string
		want []int
	}{
		{"127.0.0.1:9092", []int{10, 31}}, // the listener, not the connection to it
		{"127.0.0.2:9092", []int{13}},     // another loopback address, same port
		{"127.0.0.3:9092", nil},           // no one listens there
		{"127.0.0.1:8080", []int{11}},     // IPv4 wildcard
		{"[::1]:8080", nil},               // the IPv4 wildcard takes no IPv6 connections
		{"[::1]:9093", []int{20}},         // IPv6
		{"127.0.0.1:9093", nil},           // ::1 takes no IPv4 connections
		{"127.0.0.1:8081", []int{21}},     // the IPv6 wildcard takes IPv4 connections too
		{"[::1]:8081", []int{21}},         // and IPv6 ones
		{"127.0.0.1:9094", []int{22}},     // IPv4-mapped
		{"127.0.0.1:9095", nil},           // its process's fds cannot be read
		{"127.0.0.1:54321", nil},          // a connection's local port, not listening
	} {
		got := listeners(root, []netip.AddrPort{netip.MustParseAddrPort(tc.addr)})
		if len(got) != 1 || !slices.Equal(got[0], tc.want) {
			t.Errorf("listeners(%s) = %v, want [%v]", tc.addr, got, tc.want)
		}
	}
	// Several addresses at once, in their order.
	got := listeners(root, []netip.AddrPort{netip.MustParseAddrPort("[::1]:9093"), netip.MustParseAddrPort("127.0.0.9:1"), netip.MustParseAddrPort("127.0.0.1:9092")})
	if want := [][]int{{20}, nil, {10, 31}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("listeners of three addresses = %v, want %v", got, want)
	}
	// Without /proc/net: nothing, for each address.
	if got := listeners(t.TempDir(), []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9092")}); len(got) != 1 || got[0] != nil {
		t.Errorf("listeners without /proc = %v", got)
	}
}

// TestParseSocketLine: the fields a line of /proc/net/tcp{,6} gives, and
// what is no such line.
func TestParseSocketLine(t *testing.T) {
	littleEndian(t)
	for _, tc := range []struct {
		line  string
		local string
		state uint8
		inode uint64
		ok    bool
	}{
		{"   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1001 1 0000000000000000 100 0 0 10 0", "127.0.0.1:9092", 0x0A, 1001, true},
		{"   5: 0100007F:D432 0100007F:2384 06 00000000:00000000 03:00000A06 00000000     0        0 0 3 0000000000000000", "127.0.0.1:54322", 0x06, 0, true}, // TIME_WAIT: no inode
		{"   0: 00000000000000000000000001000000:2385 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2001 1", "[::1]:9093", 0x0A, 2001, true},
		{"   2: 0000000000000000FFFF00000100007F:2386 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2003 1", "[::ffff:127.0.0.1]:9094", 0x0A, 2003, true},
		{"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", "", 0, 0, false}, // the header
		{"", "", 0, 0, false},
		{"   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000", "", 0, 0, false},                  // cut short
		{"   0: 0100007F2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1001 1", "", 0, 0, false},   // no port
		{"   0: 00007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1001 1", "", 0, 0, false},    // 3-byte address
		{"   0: 0100007F:12384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1001 1", "", 0, 0, false}, // port beyond 16 bits
		{"   0: 0100007F:2384 00000000:0000 10A 00000000:00000000 00:00000000 00000000  1000        0 1001 1", "", 0, 0, false}, // state beyond 8 bits
		{"   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 inode 1", "", 0, 0, false}, // no inode number
	} {
		local, state, inode, ok := parseSocketLine(tc.line)
		var want netip.AddrPort
		if tc.local != "" {
			want = netip.MustParseAddrPort(tc.local)
		}
		if local != want || state != tc.state || inode != tc.inode || ok != tc.ok {
			t.Errorf("parseSocketLine(%q) = %v, %#x, %d, %v; want %v, %#x, %d, %v", tc.line, local, state, inode, ok, want, tc.state, tc.inode, tc.ok)
		}
	}
}

// TestListenersThisProcess: a listener this test opens is found as this
// process, at its own address and not on a port no one listens on; one on
// the wildcard address is found at both loopback addresses.
func TestListenersThisProcess(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	addr := l.Addr().(*net.TCPAddr).AddrPort()
	none := closed.Addr().(*net.TCPAddr).AddrPort()
	got := Listeners([]netip.AddrPort{addr, none})
	if want := [][]int{{os.Getpid()}, nil}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Listeners(%s, %s) = %v, want %v", addr, none, got, want)
	}

	wild, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer wild.Close()
	port := uint16(wild.Addr().(*net.TCPAddr).Port)
	at := []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)}
	if c, err := net.Dial("tcp6", fmt.Sprintf("[::1]:%d", port)); err == nil {
		c.Close() // IPv6 loopback is up: the wildcard takes it too
		at = append(at, netip.AddrPortFrom(netip.IPv6Loopback(), port))
	}
	for i, pids := range Listeners(at) {
		if !slices.Equal(pids, []int{os.Getpid()}) {
			t.Errorf("the wildcard listener on port %d: %s finds %v, want this process", port, at[i], pids)
		}
	}
	if Name(os.Getpid()) == "" || Name(-1) != "" {
		t.Errorf("Name of this process %q, of no process %q", Name(os.Getpid()), Name(-1))
	}
}

// formatSocketLine writes a /proc/net/tcp{,6} line as the kernel does,
// of a socket bound to local in state with inode.
func formatSocketLine(local netip.AddrPort, state uint8, inode uint64) string {
	b := local.Addr().AsSlice()
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.NativeEndian.Uint32(b[i:]))
	}
	return fmt.Sprintf("%4d: %X:%04X %X:0000 %02X 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0000000000000000 100 0 0 10 0",
		0, b, local.Port(), make([]byte, len(b)), state, inode)
}

// FuzzParseSocketLine: no line makes the parser panic, and what it reads
// from a line is what it reads again from the line the kernel would
// write for that socket.
func FuzzParseSocketLine(f *testing.F) {
	for _, text := range []string{fixtureTCP, fixtureTCP6} {
		for _, line := range strings.Split(text, "\n") {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		local, state, inode, ok := parseSocketLine(line)
		if !ok {
			return
		}
		again := formatSocketLine(local, state, inode)
		l2, s2, i2, ok2 := parseSocketLine(again)
		if !ok2 || l2 != local || s2 != state || i2 != inode {
			t.Fatalf("%q reads %v %#x %d; written again as %q it reads %v %#x %d %v", line, local, state, inode, again, l2, s2, i2, ok2)
		}
	})
}
