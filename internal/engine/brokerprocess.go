package engine

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/brokerbench/brokerbench/internal/sysmetrics"
)

// brokerProcesses returns the processes on this machine that listen at
// the loopback addresses among endpoints (a broker given by address that
// runs here), as broker nodes to sample, numbered from 1 in the
// endpoints' order, and says each in words: "pid 1234 (java) listening on
// 127.0.0.1:9092". An endpoint counts when its host is a loopback address
// or a name whose addresses are all loopback ones (localhost); others,
// those without a port, and those where no process this one may see
// listens give none. self (brokerbench, sampled as the client) is never a
// node. resolve returns the addresses of a host name (resolveHost); listen
// finds the listeners at addresses (proc.Listeners); name names a process
// (proc.Name). The processes are only read, never signalled.
func brokerProcesses(endpoints []string, self int, resolve func(host string) []netip.Addr,
	listen func([]netip.AddrPort) [][]int, name func(pid int) string) (nodes []sysmetrics.Node, said []string) {
	var at []netip.AddrPort
	for _, e := range endpoints {
		host, port, ok := endpointHostPort(e)
		if !ok || host == "" {
			continue
		}
		addrs := []netip.Addr{}
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = append(addrs, a)
		} else {
			addrs = resolve(host)
		}
		if len(addrs) == 0 || slices.ContainsFunc(addrs, func(a netip.Addr) bool { return !a.IsLoopback() }) {
			continue
		}
		for _, a := range addrs {
			at = append(at, netip.AddrPortFrom(a.Unmap(), port))
		}
	}
	if len(at) == 0 {
		return nil, nil
	}
	for i, pids := range listen(at) {
		for _, pid := range pids {
			if pid == self || slices.ContainsFunc(nodes, func(n sysmetrics.Node) bool { return n.PID == pid }) {
				continue
			}
			nodes = append(nodes, sysmetrics.Node{ID: len(nodes) + 1, PID: pid})
			who := fmt.Sprintf("pid %d", pid)
			if n := name(pid); n != "" {
				who += " (" + n + ")"
			}
			said = append(said, who+" listening on "+at[i].String())
		}
	}
	return nodes, said
}

// resolveHost returns the addresses of host, as this machine resolves it
// (none if it does not within a few seconds).
func resolveHost(ctx context.Context, host string) []netip.Addr {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, _ := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	return addrs
}
