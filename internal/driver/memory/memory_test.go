package memory

import (
	"testing"

	"github.com/brokerbench/brokerbench/internal/driver"
	"github.com/brokerbench/brokerbench/internal/driver/drivertest"
)

// TestConformance: the reference driver passes the driver contract's
// conformance suite.
func TestConformance(t *testing.T) {
	b := NewBroker()
	drivertest.Run(t, drivertest.Target{
		Connect: func(*testing.T) driver.Driver { return b.NewDriver() },
		Unreachable: func(*testing.T) (driver.Driver, error) {
			gone := NewBroker()
			gone.Unreachable = true
			return gone.NewDriver(), nil
		},
		Capabilities: Capabilities,
	})
}
