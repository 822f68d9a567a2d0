package results

import "fmt"

// A measurement is disturbed when processes other than brokerbench and the
// broker nodes it samples (and a hypervisor's steal) took, on average over
// the measurement, at least DisturbedShare of the machine's cores and at
// least minDisturbedCores. On a quiet 2-core machine the others took 0.4%
// of a core beside a local Kafka broker, at 10,000 and at 100,000 msg/s
// over loopback; other work beside it took 0.8 to 1.8 cores.
const (
	DisturbedShare    = 0.25
	minDisturbedCores = 0.5
)

// Disturbance returns the CPU that processes other than brokerbench and
// its sampled broker nodes took, in cores, steal included, and whether that
// disturbed the measurement. A nil System (not sampled) is never
// disturbed.
func Disturbance(s *System) (cores float64, disturbed bool) {
	if s == nil {
		return 0, false
	}
	cores = s.OtherCPU/100 + s.CPUSteal/100*float64(s.Cores)
	limit := minDisturbedCores
	if s.Cores > 0 {
		limit = max(limit, DisturbedShare*float64(s.Cores))
	}
	return cores, cores >= limit
}

// DisturbanceText says, in words, what the other processes took of the
// machine: "other processes used 1.4 of 2 cores".
func DisturbanceText(s *System) string {
	cores, _ := Disturbance(s)
	text := fmt.Sprintf("other processes used %.1f", cores)
	if s != nil && s.Cores > 0 {
		text += fmt.Sprintf(" of %d cores", s.Cores)
	} else {
		text += " cores"
	}
	if s != nil && s.CPUSteal >= 1 {
		text += fmt.Sprintf(" (%.0f%% of the machine stolen by its hypervisor)", s.CPUSteal)
	}
	return text
}
