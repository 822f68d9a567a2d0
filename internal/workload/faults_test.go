package workload

import (
	"strings"
	"testing"
	"time"
)

// TestLinkFaults: link faults parse with their shape and peer, and every
// misplaced or missing setting is an error naming the line.
func TestLinkFaults(t *testing.T) {
	w, err := Parse("w.yaml", []byte(`name: x
duration: 30s
faults:
  - {at: 1s, action: delay, node: leader, peer: client, delay: 200ms, jitter: 20ms, for: 5s}
  - {at: 2s, action: bandwidth, node: 2, bandwidthKBps: 500}
  - {at: 3s, action: partition, node: controller, for: 2s}
  - {at: 4s, action: kill, node: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := w.Faults
	if len(f) != 4 || !f[0].OnLinks() || f[3].OnLinks() || !w.NeedsLinks() {
		t.Fatalf("faults %+v", f)
	}
	if f[0].Peer != "client" || f[0].Delay != 200*time.Millisecond || f[0].Jitter != 20*time.Millisecond || f[1].BandwidthKBps != 500 {
		t.Errorf("shapes %+v", f)
	}
	if got := f[0].String(); got != "delay the links of leader and client, 200ms ± 20ms at 1s for 5s" {
		t.Errorf("String() = %q", got)
	}
	for _, tc := range []struct{ fault, want string }{
		{"{at: 1s, action: delay, node: 1}", "a delay needs delay"},
		{"{at: 1s, action: bandwidth, node: 1}", "needs bandwidthKBps"},
		{"{at: 1s, action: kill, node: 1, delay: 5ms}", "belong to link faults"},
		{"{at: 1s, action: partition, node: 1, delay: 5ms}", "belong to a delay fault"},
		{"{at: 1s, action: delay, node: 1, delay: 5ms, jitter: 9ms}", "jitter 9ms is larger"},
		{"{at: 1s, action: delay, node: 1, delay: 1500us}", "whole milliseconds"},
		{"{at: 1s, action: delay, node: 1, delay: 5ms, bandwidthKBps: 3}", "belongs to a bandwidth fault"},
		{"{at: 1s, action: reset, node: 2, peer: 2}", "to itself"},
		{"{at: 1s, action: reset, node: 2, peer: everyone}", `node id (1 or more) or client, got "everyone"`},
		{"{at: 1s, action: cut, node: 2}", `must be one of`},
	} {
		_, err := Parse("w.yaml", []byte("name: x\nduration: 30s\nfaults:\n  - "+tc.fault+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "w.yaml:4") {
			t.Errorf("%s: error %v; want %q at w.yaml:4", tc.fault, err, tc.want)
		}
	}
}

// TestSetupNetwork: a setup's network parses, and impossible ones are
// errors naming the line.
func TestSetupNetwork(t *testing.T) {
	study := func(network string) string {
		return "name: s\nworkloads:\n  - {name: w}\nsetups:\n  - name: a\n    brokers: 3\n    network: " + network + "\n"
	}
	s, err := ParseStudy("s.yaml", []byte(study("{zones: 3, delay: 20ms, jitter: 4ms}")))
	if err != nil {
		t.Fatal(err)
	}
	nw := s.Setups[0].Network
	if nw == nil || nw.Zones != 3 || nw.Delay != 20*time.Millisecond || nw.Jitter != 4*time.Millisecond {
		t.Fatalf("network %+v", nw)
	}
	if got := nw.String(); got != "3 zones, 20ms ± 4ms one way between zones" {
		t.Errorf("String() = %q", got)
	}
	for _, tc := range []struct{ network, want string }{
		{"{zones: 3, delay: 2ms, jitter: 4ms}", "larger than the delay"},
		{"{zones: 0}", "between 1 and 9"},
		{"{zones: 3, delay: 1500us}", "whole milliseconds"},
		{"{zones: 3, latency: 5ms}", `unknown field`},
	} {
		_, err := ParseStudy("s.yaml", []byte(study(tc.network)))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "s.yaml:7") {
			t.Errorf("%s: error %v; want %q at s.yaml:7", tc.network, err, tc.want)
		}
	}
}
