package rie

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// listening reports whether process pid holds a socket listening on each
// of addrs (IPv4 host:port), as Linux's /proc says: the kernel's table of
// TCP sockets (/proc/net/tcp) gives each listening address's socket, and
// the process's descriptors (/proc/pid/fd) the sockets it holds.
func listening(pid int, addrs ...string) (bool, error) {
	want := map[string]bool{}
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().Is4() {
			return false, fmt.Errorf("rie: %q is not an IPv4 address and port", a)
		}
		b := ap.Addr().As4()
		// /proc/net/tcp writes the address in the host's byte order
		// (little-endian here) and the port big-endian.
		want[fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], ap.Port())] = false
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return false, fmt.Errorf("rie: %w", err)
	}
	defer func() { _ = f.Close() }()
	sockets := map[string]string{} // "socket:[inode]" → local address
	s := bufio.NewScanner(f)
	for s.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(s.Text())
		const listen = "0A"
		if len(fs) < 10 || fs[3] != listen {
			continue
		}
		if _, ok := want[fs[1]]; ok {
			sockets["socket:["+fs[9]+"]"] = fs[1]
		}
	}
	if err := s.Err(); err != nil {
		return false, fmt.Errorf("rie: %w", err)
	}
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil {
			if a, ok := sockets[l]; ok {
				want[a] = true
			}
		}
	}
	for _, held := range want {
		if !held {
			return false, nil
		}
	}
	return true, nil
}
