package memory

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func config(common ...workload.Property) *workload.DriverConfig {
	return &workload.DriverConfig{Name: "memory", Source: "d.yaml", ReplicationFactor: 1, Common: common}
}

// TestRegisteredDriver: drivers made from configs with the same costs
// reach one broker, so that a run's clients meet; other costs are
// another broker; the costs are in effect and in the effective config.
func TestRegisteredDriver(t *testing.T) {
	m, ok := brokers.Lookup("memory")
	if !ok || !m.InProcess || m.Local != nil || !m.Capabilities.Written {
		t.Fatalf("module %+v", m)
	}
	ctx := context.Background()
	slow := workload.Property{Key: "delay.ms", Value: "2.5"}
	a, err := brokers.New(config(slow), driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := brokers.New(config(slow), driver.Options{})
	other, _ := brokers.New(config(), driver.Options{})
	if err := a.CreateTopic(ctx, driver.TopicSpec{Name: "shared-by-costs", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteTopic(ctx, "shared-by-costs"); err != nil {
		t.Errorf("a driver with the same costs does not see the topic: %v", err)
	}
	if err := a.CreateTopic(ctx, driver.TopicSpec{Name: "own-costs", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	defer a.DeleteTopic(ctx, "own-costs")
	if err := other.DeleteTopic(ctx, "own-costs"); !errors.Is(err, driver.ErrTopicNotFound) {
		t.Errorf("a driver with other costs reached the same broker: %v", err)
	}
	if d := a.(*Driver).b.Delay; d.Microseconds() != 2500 {
		t.Errorf("delay %s, want 2.5ms", d)
	}
	if v, _ := a.EffectiveConfig()["common"].Get("delay.ms"); v != "2.5" {
		t.Errorf("effective delay.ms %q", v)
	}
	if v, _ := other.EffectiveConfig()["common"].Get("ceiling.per.second"); v != "0" {
		t.Errorf("effective ceiling.per.second %q, want the default 0", v)
	}
}

// TestSettingsRefused: settings out of range or unknown, and an address
// for the broker in the process, are input errors that say what to do.
func TestSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		dc   *workload.DriverConfig
		opts driver.Options
		want string
	}{
		// A negative delay, located at its line.
		{"negative delay", config(workload.Property{Key: "delay.ms", Value: "-1", File: "d.yaml", Line: 4}), driver.Options{}, "d.yaml:4"},
		// Not a number.
		{"ceiling not a number", config(workload.Property{Key: "ceiling.per.second", Value: "fast"}), driver.Options{}, `must be a number of at least 0, got "fast"`},
		// An infinite ceiling is no ceiling: 0 says so.
		{"infinite ceiling", config(workload.Property{Key: "ceiling.per.second", Value: "+Inf"}), driver.Options{}, "ceiling.per.second"},
		// A misspelled setting gets a suggestion.
		{"misspelled", config(workload.Property{Key: "delay", Value: "1"}), driver.Options{}, `did you mean "delay.ms"`},
		// The broker has no address: --broker is refused.
		{"address", config(), driver.Options{Endpoints: []string{"127.0.0.1:9092"}}, "leave out --broker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.dc, tc.opts)
			if !errors.Is(err, workload.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want an input error with %q", err, tc.want)
			}
		})
	}
}
