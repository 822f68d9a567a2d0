package kafka

import "testing"

// TestVersionLabel: a version guessed from the protocol is said to be a
// guess, as the protocol knows it (4.3, not 4.3.1), each guess once.
func TestVersionLabel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		guesses []string
		want    string
	}{
		// One broker, an exact guess: the release line, without the "v".
		{"one broker", []string{"v4.3"}, "Apache Kafka 4.3 (guessed from API versions)"},
		// Three brokers of one release: said once.
		{"same release", []string{"v4.3", "v4.3", "v4.3"}, "Apache Kafka 4.3 (guessed from API versions)"},
		// A rolling upgrade: both releases, in order.
		{"mixed", []string{"v4.3", "v4.2", "v4.3"}, "Apache Kafka 4.2, 4.3 (guessed from API versions)"},
		// kversion's inexact guesses keep their words.
		{"at least", []string{"at least v4.1"}, "Apache Kafka at least 4.1 (guessed from API versions)"},
		{"between", []string{"between v0.10.0 and v0.11.0"}, "Apache Kafka between 0.10.0 and 0.11.0 (guessed from API versions)"},
		{"custom", []string{"unknown custom version"}, "Apache Kafka unknown custom version (guessed from API versions)"},
		// No broker answered: nothing is claimed.
		{"none", nil, "Apache Kafka (version unknown: no broker answered)"},
	} {
		if got := versionLabel(tc.guesses); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
