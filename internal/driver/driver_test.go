package driver

import (
	"hash/fnv"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/workload"
)

func TestRedactEndpoints(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://bench:s3cret@127.0.0.1:5672/vhost": "amqp://bench:xxxxx@127.0.0.1:5672/vhost",
		"nats://a:p1@h1:4222, nats://b:p2@h2:4222": "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222",
		"127.0.0.1:9092,127.0.0.2:9092":            "127.0.0.1:9092,127.0.0.2:9092",
		"redis://:onlypassword@127.0.0.1:6379":     "redis://:xxxxx@127.0.0.1:6379",
		"amqp://user@127.0.0.1":                    "amqp://user@127.0.0.1",
	} {
		got := RedactEndpoints(in)
		if got != want {
			t.Errorf("RedactEndpoints(%q) = %q, want %q", in, got, want)
		}
		for _, secret := range []string{"s3cret", "p1", "p2", "onlypassword"} {
			if strings.Contains(got, secret) {
				t.Errorf("RedactEndpoints(%q) keeps %q", in, secret)
			}
		}
	}
}

// TestSettings: defaults are overridden, unknown keys are refused with a
// suggestion and their line, and a bad number is located where it was set.
func TestSettings(t *testing.T) {
	defaults := map[string]map[string]string{"producer": {"batch": "10", "mode": "fast"}}
	dc := &workload.DriverConfig{Source: "d.yaml", Producer: workload.Properties{
		{Key: "batch", Value: "x", File: "d.yaml", Line: 4}, {Key: "mdoe", Value: "slow", File: "d.yaml", Line: 5}}}
	s := ParseSettings(dc, "Test", defaults)
	if s.String("producer", "mode") != "fast" {
		t.Errorf("default mode = %q", s.String("producer", "mode"))
	}
	s.Int("producer", "batch", 1)
	err := s.Err()
	for _, want := range []string{"d.yaml:4", "producerConfig batch", `got "x"`, "d.yaml:5", `did you mean "mode"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to contain %q", err, want)
		}
	}
	ok := ParseSettings(&workload.DriverConfig{Source: "d.yaml", Producer: workload.Properties{{Key: "batch", Value: "20"}}}, "Test", defaults)
	if n := ok.Int("producer", "batch", 1); n != 20 || ok.Err() != nil {
		t.Errorf("batch = %d, %v", n, ok.Err())
	}
	if eff := ok.Effective("mode")["producer"]; len(eff) != 1 || eff[0].Value != "20" {
		t.Errorf("effective %v", eff)
	}
}

// TestSpreader: a key's partition is its FNV-1a hash (as hash/fnv
// computes it) modulo the partitions, without allocating; messages
// without a key go to each partition in turn.
func TestSpreader(t *testing.T) {
	var s Spreader
	for _, key := range []string{"a", "order-42", "ключ", "\x00\xff"} {
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		if got, want := s.Partition([]byte(key), 7), int(h.Sum32()%7); got != want {
			t.Errorf("key %q: partition %d, want %d", key, got, want)
		}
	}
	seen := map[int]int{}
	for range 12 {
		seen[s.Partition(nil, 3)]++
	}
	if len(seen) != 3 || seen[0] != 4 || seen[1] != 4 || seen[2] != 4 {
		t.Errorf("without keys, 12 messages over 3 partitions went %v", seen)
	}
	if s.Partition([]byte("x"), 1) != 0 || s.Partition(nil, 0) != 0 {
		t.Error("one partition (or none) is not partition 0")
	}
	key := []byte("order-42")
	if a := testing.AllocsPerRun(100, func() { s.Partition(key, 7) }); a != 0 {
		t.Errorf("%v allocations per keyed message", a)
	}
}
