package rabbitmq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/workload"
)

// TestPacerBatches: creations asked at once start in batches of the
// pacer's size, each batch the delay after the one before, the first
// the delay after the first was asked; a nil pacer does not wait, and
// a wait ends with its context.
func TestPacerBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pacer{size: 2, delay: 100 * time.Millisecond}
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if err := p.wait(context.Background()); err != nil {
					t.Error(err)
				}
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(at)
		ms := time.Millisecond
		if want := []time.Duration{100 * ms, 100 * ms, 200 * ms, 200 * ms, 300 * ms}; !slices.Equal(at, want) {
			t.Errorf("creations started at %v, want %v", at, want)
		}
		if err := (*pacer)(nil).wait(context.Background()); err != nil || time.Since(start) != 300*ms {
			t.Errorf("a nil pacer waited, or failed: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*ms)
		defer cancel()
		if err := (&pacer{size: 1, delay: 100 * ms}).wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a wait past its context's end = %v", err)
		}
	})
}

// TestCreationPace: OMB's creation settings pace the clients as given;
// an OMB driver file without them gets OMB's defaults (batches of 5,
// 100 ms apart); a file of brokerbench's own format without them
// creates clients at once; a batch size below 1 is refused.
func TestCreationPace(t *testing.T) {
	prop := func(k, v string) workload.Property {
		return workload.Property{Key: k, Value: v, File: "d.yaml", Line: 2}
	}
	for _, tc := range []struct {
		name       string
		format     workload.Format
		common     workload.Properties
		prod, cons *pacer
		err        string
	}{
		{name: "OMB's file", format: workload.OMB,
			common: workload.Properties{prop("producerCreationDelay", "250"), prop("producerCreationBatchSize", "2"), prop("consumerCreationDelay", "0"), prop("consumerCreationBatchSize", "9")},
			prod:   &pacer{size: 2, delay: 250 * time.Millisecond}, cons: &pacer{size: 9}},
		{name: "OMB's defaults", format: workload.OMB,
			prod: &pacer{size: 5, delay: 100 * time.Millisecond}, cons: &pacer{size: 5, delay: 100 * time.Millisecond}},
		{name: "one of a pair", format: workload.Native, common: workload.Properties{prop("consumerCreationDelay", "10")},
			cons: &pacer{size: 5, delay: 10 * time.Millisecond}},
		{name: "none", format: workload.Native},
		{name: "batch of 0", format: workload.Native, common: workload.Properties{prop("producerCreationBatchSize", "0")}, err: "d.yaml:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(&workload.DriverConfig{Name: "rabbitmq", Source: "d.yaml", Format: tc.format, ReplicationFactor: 1, Common: tc.common}, nil, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			same := func(a, b *pacer) bool {
				return (a == nil) == (b == nil) && (a == nil || a.size == b.size && a.delay == b.delay)
			}
			if !same(c.producerPace, tc.prod) || !same(c.consumerPace, tc.cons) {
				t.Errorf("producers paced %+v, consumers %+v; want %+v, %+v", c.producerPace, c.consumerPace, tc.prod, tc.cons)
			}
		})
	}
}
