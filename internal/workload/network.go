package workload

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Network shapes the links of a local cluster for all of a setup's runs,
// as if its nodes stood in Zones sites: broker i and dedicated controller
// j are in zone ((i-1) mod Zones)+1, the clients in zone 1, and every link
// between two zones carries Delay ± Jitter each way. Links within a zone
// are not shaped. A setup with a network runs on a cluster whose links
// pass through brokerbench's link proxy even when Delay is 0, which makes
// it the fair baseline for delayed ones.
type Network struct {
	Zones  int           `json:"zones"`
	Delay  time.Duration `json:"delayNs"`
	Jitter time.Duration `json:"jitterNs,omitempty"`
	Line   int           `json:"-"`
}

// String describes the network, e.g. "3 zones, 20ms ± 4ms one way between zones".
func (n Network) String() string {
	s := fmt.Sprintf("%d zones, %s", n.Zones, n.Delay)
	if n.Jitter > 0 {
		s += " ± " + n.Jitter.String()
	}
	return s + " one way between zones"
}

// networkField decodes a setup's network: mapping.
func networkField(dst **Network) fieldSetter {
	return func(d *decoder, key string, v *yaml.Node) {
		n := Network{Zones: 1, Line: v.Line}
		before := len(d.errs)
		d.mapping(v, "a network (zones, delay, jitter)", map[string]fieldSetter{
			"zones":  intField(&n.Zones, 1, 9),
			"delay":  durationField(&n.Delay, 0),
			"jitter": durationField(&n.Jitter, 0),
		})
		if len(d.errs) > before {
			return
		}
		if n.Jitter > n.Delay {
			d.fail(v, key, "jitter %s is larger than the delay %s: a link cannot deliver before it is sent", n.Jitter, n.Delay)
			return
		}
		if n.Delay%time.Millisecond != 0 || n.Jitter%time.Millisecond != 0 {
			d.fail(v, key, "delay and jitter are applied in whole milliseconds, got %s ± %s", n.Delay, n.Jitter)
			return
		}
		*dst = &n
	}
}
