package memory

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/brokerbench/brokerbench/internal/brokers"
	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/workload"
)

func init() {
	brokers.Register(brokers.Module{
		Name: "memory", New: New, InProcess: true, Capabilities: Capabilities, Faults: Faults,
		NoLocal:   "the memory broker lives in brokerbench's own process",
		NoMetrics: "the memory broker has no nodes: its costs are the driver config's",
		Docs:      "docs/drivers/memory.md",
	})
}

// settings are the driver's settings by section, with their defaults:
// the broker's costs, all in commonConfig.
var settings = map[string]map[string]string{
	"common": {
		"delay.ms":           "0", // one-way time between a client and the broker (Broker.Delay)
		"ceiling.per.second": "0", // most messages stored per second over all producers (Broker.Ceiling); 0: none
	},
}

// costs are what a broker of the process charges; drivers whose configs
// give the same costs share a broker.
type costs struct {
	delay   time.Duration
	ceiling float64
}

var (
	sharedMu sync.Mutex
	byCosts  = map[costs]*Broker{}
)

// shared returns the broker of the process with costs c, made on first
// use. A broker's costs are fixed once clients use it, so a config with
// other costs gets a broker of its own.
func shared(c costs) *Broker {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	b, ok := byCosts[c]
	if !ok {
		b = NewBroker()
		b.Delay, b.Ceiling = c.delay, c.ceiling
		byCosts[c] = b
	}
	return b
}

// New is the registered factory: a driver connected to the broker of this
// process that has the costs dc gives, so that every driver made for one
// run (its producers', its consumers', the one that counts what was
// written) reaches the same topics. The broker is in the process, so an
// address is an input error: it would be one no client ever reaches.
func New(dc *workload.DriverConfig, opts driver.Options) (driver.Driver, error) {
	s := driver.ParseSettings(dc, "memory", settings)
	delayMS := nonNegative(s, "delay.ms", 60_000)
	ceiling := nonNegative(s, "ceiling.per.second", math.Inf(1))
	if len(opts.Endpoints) > 0 {
		return nil, fmt.Errorf("%w: %s: the memory driver's broker is in brokerbench's own process and has no address; leave out --broker", workload.ErrInvalid, dc.Source)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	c := costs{delay: time.Duration(math.Round(delayMS * float64(time.Millisecond))), ceiling: ceiling}
	return &Driver{b: shared(c), effective: s.Effective()}, nil
}

// nonNegative reads a common setting as a number from 0 to most (+Inf:
// no bound), recording an error located where it was set if it is not
// one.
func nonNegative(s *driver.Settings, key string, most float64) float64 {
	v := s.String("common", key)
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && f >= 0 && f <= most && !math.IsInf(f, 0) {
		return f
	}
	if math.IsInf(most, 1) {
		s.Fail("common", key, "must be a number of at least 0, got %q", v)
	} else {
		s.Fail("common", key, "must be a number from 0 to %g, got %q", most, v)
	}
	return 0
}
