package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/brokerbench/brokerbench/internal/runner"
)

// TestSetupAdvice: a setup that outlasted its bound is told how to give it
// longer; other failures are left as they are.
func TestSetupAdvice(t *testing.T) {
	slow := fmt.Errorf("%w: %w of 1m2s: consumer group did not settle", runner.ErrSetup, runner.ErrSetupTimeout)
	if err := setupAdvice(slow); !errors.Is(err, runner.ErrSetupTimeout) || !strings.Contains(err.Error(), "--setup-timeout") {
		t.Errorf("advice for a slow setup: %v", err)
	}
	other := fmt.Errorf("%w: topic refused", runner.ErrSetup)
	if err := setupAdvice(other); err != other {
		t.Errorf("advice for another failure: %v", err)
	}
}
