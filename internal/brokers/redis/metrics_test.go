package redis

import (
	"strings"
	"testing"
)

// TestParseInfo: the INFO fields brokerbench knows become counters and
// gauges, the others are left out; INFO without one is an error.
func TestParseInfo(t *testing.T) {
	c, g, err := ParseInfo(strings.NewReader("# Stats\r\ntotal_commands_processed:5000\r\ninstantaneous_ops_per_sec:120\r\nredis_version:7.0.15\r\nused_memory:1048576\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c["redis_commands_total"] != 5000 || g["redis_ops_per_second"] != 120 || g["redis_memory_used_bytes"] != 1048576 || len(c)+len(g) != 3 {
		t.Errorf("INFO: counters %v gauges %v", c, g)
	}
	if _, _, err := ParseInfo(strings.NewReader("# nothing\r\n")); err == nil {
		t.Error("INFO without a known field: no error")
	}
}

func FuzzParseInfo(f *testing.F) {
	f.Add("total_commands_processed:1\r\nused_memory:2\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, g, err := ParseInfo(strings.NewReader(text))
		if err == nil && len(c)+len(g) == 0 {
			t.Error("no error and nothing read")
		}
	})
}
