package engine

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/local"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// localVersionAt returns the broker software and exact version of the
// local cluster that brokerbench runs on this machine at one of the
// addresses a run was given (--broker, or the driver config's own, such as
// an OMB driver file's localhost:9092), or "" if none runs there. A
// driver may only guess the version from the protocol (Kafka: 4.3 for
// 4.3.1); the cluster brokerbench installed knows it. status reads a
// local cluster's status (localStatus).
func localVersionAt(dc *workload.DriverConfig, endpoints []string, status func(kind string, port int) (product string, st local.Status)) string {
	reg, ok := brokers.Lookup(dc.Name)
	if !ok || reg.LocalKind() == "" {
		return ""
	}
	if len(endpoints) == 0 {
		endpoints = configuredEndpoints(dc, reg.EndpointSettings)
	}
	for _, e := range endpoints {
		addr, port, ok := loopbackAddr(e)
		if !ok {
			continue
		}
		if product, st := status(reg.LocalKind(), port); servedBy(st, addr) {
			return product + " " + st.Version
		}
	}
	return ""
}

// localStatus returns the broker software of kind and the status of its
// local cluster whose clients use port, found where local.New keeps it.
func localStatus(kind string, port int) (product string, st local.Status) {
	c, err := brokers.NewLocal(kind, port, 1)
	if err != nil {
		return "", local.Status{}
	}
	return c.Kind.Product(), c.Status()
}

// configuredEndpoints returns the addresses in a driver config's setting
// configuredEndpoints returns the addresses dc's config gives in the
// first of settings it sets, in any section (files made for Kafka's own
// tools give them in producer and consumer properties alone); none if
// it sets none of them.
func configuredEndpoints(dc *workload.DriverConfig, settings []string) []string {
	for _, setting := range settings {
		for _, section := range []workload.Properties{dc.Common, dc.Producer, dc.Consumer} {
			if v, ok := section.Get(setting); ok && v != "" {
				return strings.Split(v, ",")
			}
		}
	}
	return nil
}

// loopbackAddr returns endpoint as host:port with "localhost" made
// 127.0.0.1, and its port, if it names a loopback address; a scheme
// ("nats://") and credentials are left out.
func loopbackAddr(endpoint string) (addr string, port int, ok bool) {
	host, p, ok := endpointHostPort(endpoint)
	if !ok {
		return "", 0, false
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", 0, false
	}
	return net.JoinHostPort(host, strconv.Itoa(int(p))), int(p), true
}

// endpointHostPort returns the host and port an endpoint names, in the
// forms drivers take: "host:port", "[::1]:port", or a URL
// ("nats://user:password@host:port", "http://host:port/path"); false
// without a port from 1 to 65535.
func endpointHostPort(endpoint string) (host string, port uint16, ok bool) {
	e := strings.TrimSpace(endpoint)
	if i := strings.Index(e, "://"); i >= 0 {
		e = e[i+3:]
	}
	if i := strings.LastIndex(e, "@"); i >= 0 {
		e = e[i+1:]
	}
	e, _, _ = strings.Cut(e, "/")
	host, p, err := net.SplitHostPort(e)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return "", 0, false
	}
	return host, uint16(n), true
}

// servedBy reports whether the running local cluster st serves clients at
// addr (a loopbackAddr).
func servedBy(st local.Status, addr string) bool {
	return st.Running && slices.ContainsFunc(st.Bootstrap, func(b string) bool {
		a, _, ok := loopbackAddr(b)
		return ok && a == addr
	})
}
