package main

import (
	"fmt"

	"github.com/brokerbench/brokerbench/bench/toolcompare"
)

// cpuPerMillion is a run's client CPU seconds per million messages the
// broker stored.
func cpuPerMillion(m measurement) float64 {
	return m.CPU / max(float64(m.Stored), 1) * 1e6
}

// mib is a run's peak resident set in MiB.
func mib(m measurement) float64 { return float64(m.MaxRSS) / (1 << 20) }

// report prints one workload's figures per tool as min / median / max
// over the repetitions, and the ratios OMB / brokerbench paired
// repetition by repetition.
func report(ms []measurement) {
	by := map[string][]measurement{}
	for _, m := range ms {
		by[m.Tool] = append(by[m.Tool], m)
	}
	figures := []struct {
		name     string
		decimals int
		of       func(measurement) float64
	}{
		{"msgs in its result", 0, func(m measurement) float64 { return float64(m.Records) }},
		{"msgs counted by the broker", 0, func(m measurement) float64 { return float64(m.Stored) }},
		{"publish msg/s", 0, func(m measurement) float64 { return m.Rate }},
		{"client CPU-s", 1, func(m measurement) float64 { return m.CPU }},
		{"CPU-s per 1M msgs", 2, cpuPerMillion},
		{"max RSS MiB", 0, mib},
	}
	fmt.Println("  min / median / max over repetitions:")
	fmt.Printf("  %-11s", "tool")
	for _, f := range figures {
		fmt.Printf(" %32s", f.name)
	}
	fmt.Println()
	for _, tool := range []string{toolOMB, toolBrokerbench} {
		fmt.Printf("  %-11s", tool)
		for _, f := range figures {
			var v []float64
			for _, m := range by[tool] {
				v = append(v, f.of(m))
			}
			s := toolcompare.SpreadOf(v)
			fmt.Printf(" %10.*f %10.*f %10.*f", f.decimals, s.Min, f.decimals, s.Med, f.decimals, s.Max)
		}
		fmt.Println()
	}
	ratio := func(of func(measurement) float64) string {
		var v []float64
		for i := range min(len(by[toolOMB]), len(by[toolBrokerbench])) {
			v = append(v, of(by[toolOMB][i])/of(by[toolBrokerbench][i]))
		}
		return toolcompare.SpreadOf(v).Ratio()
	}
	fmt.Println("  ratios OMB / brokerbench, median (min-max), paired by repetition:")
	fmt.Printf("    CPU-s per message %s, max RSS %s, publish rate %s\n",
		ratio(cpuPerMillion), ratio(mib), ratio(func(m measurement) float64 { return m.Rate }))
}
