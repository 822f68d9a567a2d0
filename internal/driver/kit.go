package driver

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// This file holds what several drivers need to implement the contract:
// their settings, a pause switch for consumers, and waiting for messages
// in flight.

// Settings are a driver's config values by section ("common", "topic",
// "producer", "consumer"): its defaults, overridden by the config's own,
// each remembering where it was set. Reading a value records what is
// wrong with it; Err returns it all at once.
type Settings struct {
	source string
	vals   map[string]map[string]workload.Property
	errs   []error
}

// ParseSettings reads dc's sections against defaults (section -> key ->
// default value), refusing every key a section does not know, with a
// suggestion and the file's line. broker names the driver in messages.
func ParseSettings(dc *workload.DriverConfig, broker string, defaults map[string]map[string]string) *Settings {
	s := &Settings{source: dc.Source, vals: map[string]map[string]workload.Property{}}
	given := map[string]workload.Properties{"common": dc.Common, "topic": dc.Topic, "producer": dc.Producer, "consumer": dc.Consumer}
	for section, props := range given {
		s.vals[section] = map[string]workload.Property{}
		for k, v := range defaults[section] {
			s.vals[section][k] = workload.Property{Key: k, Value: v}
		}
		known := slices.Sorted(maps.Keys(defaults[section]))
		for _, p := range props {
			if _, ok := defaults[section][p.Key]; !ok {
				s.errs = append(s.errs, p.Error("unsupported %s setting in %sConfig%s; supported: %s", broker, section, workload.Suggest(p.Key, known), strings.Join(known, ", ")))
				continue
			}
			s.vals[section][p.Key] = p
		}
	}
	return s
}

// String returns a setting's value.
func (s *Settings) String(section, key string) string { return s.vals[section][key].Value }

// Int returns a setting as a whole number of at least lo, recording an
// error located where it was set if it is not one.
func (s *Settings) Int(section, key string, lo int) int {
	p := s.vals[section][key]
	n, err := strconv.Atoi(p.Value)
	if err != nil || n < lo {
		s.Fail(section, key, "must be a whole number of at least %d, got %q", lo, p.Value)
	}
	return n
}

// Bool returns a setting as true or false, recording an error located
// where it was set if it is neither.
func (s *Settings) Bool(section, key string) bool {
	v, err := strconv.ParseBool(s.vals[section][key].Value)
	if err != nil {
		s.Fail(section, key, "must be true or false, got %q", s.vals[section][key].Value)
	}
	return v
}

// Fail records that a setting's value is wrong, located where it was set
// (or at the config file, for a default).
func (s *Settings) Fail(section, key, format string, args ...any) {
	p := s.vals[section][key]
	if p.File == "" {
		p.File = s.source
	}
	p.Key = section + "Config " + key
	s.errs = append(s.errs, p.Error(format, args...))
}

// Err returns every problem found so far, or nil.
func (s *Settings) Err() error { return errors.Join(s.errs...) }

// Effective returns the settings with a value, sorted by key within each
// section, for Driver.EffectiveConfig; keys in hide are left out (secrets,
// aliases the driver resolved).
func (s *Settings) Effective(hide ...string) map[string]workload.Properties {
	out := map[string]workload.Properties{}
	for section, m := range s.vals {
		for k, p := range m {
			if p.Value != "" && !slices.Contains(hide, k) {
				out[section] = append(out[section], workload.Property{Key: k, Value: p.Value})
			}
		}
		out[section] = out[section].Effective()
	}
	return out
}

// PauseGate implements Pauser for a consumer whose receiving loop calls
// Wait before taking each message. The zero value is open.
type PauseGate struct {
	mu     sync.Mutex
	paused bool
	resume chan struct{} // closed by Resume while paused
}

// Pause closes the gate.
func (g *PauseGate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		g.paused, g.resume = true, make(chan struct{})
	}
}

// Resume opens the gate.
func (g *PauseGate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		g.paused = false
		close(g.resume)
	}
}

// Wait returns at once while the gate is open; while it is closed, when
// it opens or stop closes.
func (g *PauseGate) Wait(stop <-chan struct{}) {
	g.mu.Lock()
	paused, resume := g.paused, g.resume
	g.mu.Unlock()
	if paused {
		select {
		case <-resume:
		case <-stop:
		}
	}
}

// WaitIdle waits until inFlight's count is zero, for Producer.Flush, or
// until ctx ends.
func WaitIdle(ctx context.Context, inFlight *sync.WaitGroup) error {
	idle := make(chan struct{})
	go func() { inFlight.Wait(); close(idle) }()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Spreader picks the partition of a message for drivers whose clients
// have no partitioner of their own: by the FNV-1a hash of its key, so
// that one key keeps one lane, or in turn without a key. It does not
// allocate. The zero value is ready, and it is safe for concurrent use.
type Spreader struct{ next atomic.Uint64 }

// Partition returns the partition, of n, of a message with key.
func (s *Spreader) Partition(key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	if len(key) == 0 {
		return int(s.next.Add(1) % uint64(n))
	}
	const offset32, prime32 = 2166136261, 16777619 // FNV-1a, as hash/fnv
	h := uint32(offset32)
	for _, b := range key {
		h ^= uint32(b)
		h *= prime32
	}
	return int(h % uint32(n))
}
