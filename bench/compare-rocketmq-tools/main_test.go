package main

import (
	"strconv"
	"testing"
)

func TestPerfRate(t *testing.T) {
	for _, c := range []struct {
		name, out string
		rate      float64
		stored    int64
		err       bool
	}{
		// The producer's last line after a run of 2 s or more.
		{name: "complete", out: "topic: t, threadCount: 64\n[Complete] Send Total: 100000 | Send TPS: 23456 | Max RT(ms): 120 | Average RT(ms):   2.681 | Send Failed: 0 | Response Failed: 0\n",
			rate: 23456, stored: 100000},
		// A run shorter than 2 s prints its totals without a rate.
		{name: "short", out: "[Complete] Send Total: 1 Send Failed: 0 Response Failed: 0", err: true},
		// Failed sends are counted in the total, not among the stored.
		{name: "failed", out: "[Complete] Send Total: 10 | Send TPS: 5 | Max RT(ms): 1 | Average RT(ms):   1.000 | Send Failed: 3 | Response Failed: 0", rate: 5, stored: 7},
		{name: "no summary", out: "Exception in thread \"main\" org.apache.rocketmq.client.exception.MQClientException: No route info of this topic", err: true},
	} {
		rate, err := perfRate(c.out)
		if (err != nil) != c.err || rate != c.rate {
			t.Errorf("%s: perfRate = %v, %v; want %v, error %v", c.name, rate, err, c.rate, c.err)
		}
		if stored, err := perfCount(c.out); (err != nil) != c.err || stored != c.stored {
			t.Errorf("%s: perfCount = %v, %v; want %v, error %v", c.name, stored, err, c.stored, c.err)
		}
	}
}

// FuzzPerfRate checks that no output makes the summary reader panic, and
// that a rate it reads is what it reads again from a summary line it is
// written back into.
func FuzzPerfRate(f *testing.F) {
	f.Add("[Complete] Send Total: 100 | Send TPS: 50 | Max RT(ms): 1 | Average RT(ms):   1.000 | Send Failed: 0 | Response Failed: 0")
	f.Add("[Complete] Send Total: 1 Send Failed: 0 Response Failed: 0")
	f.Fuzz(func(t *testing.T, out string) {
		rate, err := perfRate(out)
		if err != nil {
			return
		}
		if rate < 0 {
			t.Fatalf("%q read as a negative rate %v", out, rate)
		}
		if stored, err := perfCount(out); err == nil && stored < 0 {
			t.Fatalf("%q read as %d stored", out, stored)
		}
		line := "[Complete] Send Total: 1 | Send TPS: " + strconv.FormatFloat(rate, 'f', 0, 64) + " | Max RT(ms): 0 | Average RT(ms): 0 | Send Failed: 0 | Response Failed: 0"
		if again, err := perfRate(line); err != nil || again != rate {
			t.Errorf("%q read as %v; written back, read as %v, %v", out, rate, again, err)
		}
	})
}
