package runner

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestSlotPool cycles every slot many times between a taker and a
// concurrent returner: no slot may be handed out twice while in use, and
// none may be lost.
func TestSlotPool(t *testing.T) {
	const n, rounds = 64, 20000
	p := newSlotPool(n)
	inUse := make([]atomic.Bool, n)
	returns := make(chan int, n)
	go func() {
		for s := range returns {
			inUse[s].Store(false)
			p.put(s)
		}
	}()
	var stock []int
	for range rounds {
		if len(stock) == 0 {
			var ok bool
			if stock, ok = p.take(context.Background(), stock); !ok {
				t.Fatal("take failed without cancellation")
			}
		}
		s := stock[len(stock)-1]
		stock = stock[:len(stock)-1]
		if !inUse[s].CompareAndSwap(false, true) {
			t.Fatalf("slot %d handed out while in use", s)
		}
		returns <- s
	}
	close(returns)
	// All n slots come back.
	deadline := time.Now().Add(5 * time.Second)
	total := len(stock)
	for total < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		var got []int
		got, _ = p.take(ctx, nil)
		cancel()
		total += len(got)
	}
	if total != n {
		t.Fatalf("%d of %d slots came back", total, n)
	}
}

func TestSlotPoolTakeWaitsAndCancels(t *testing.T) {
	p := newSlotPool(1)
	stock, _ := p.take(context.Background(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, ok := p.take(ctx, stock[:0]); ok {
		t.Fatal("take returned a slot from an empty pool")
	}
	go func() { time.Sleep(20 * time.Millisecond); p.put(stock[0]) }()
	got, ok := p.take(context.Background(), nil)
	if !ok || len(got) != 1 || got[0] != 0 {
		t.Fatalf("take after put = %v, %v", got, ok)
	}
}

// TestSlotPoolWakesAtASixteenth: a producer waiting on a full window of 32
// slots is not woken by the first slot returned, but by the second (a
// sixteenth), and then takes both.
func TestSlotPoolWakesAtASixteenth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newSlotPool(32)
		all, _ := p.take(context.Background(), nil)
		var got []int
		done := make(chan struct{})
		go func() {
			got, _ = p.take(context.Background(), nil)
			close(done)
		}()
		synctest.Wait()
		p.put(all[0])
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the first slot returned woke the producer")
		default:
		}
		p.put(all[1])
		<-done
		if len(got) != 2 {
			t.Fatalf("took %v, want the two slots returned", got)
		}
	})
}

// TestSlotPoolHandsOutSlotsInAscendingOrder: slots acknowledged out of
// order are used by the producer (from the end of its stock) in ascending
// order, and a take returns each returned slot once.
func TestSlotPoolHandsOutSlotsInAscendingOrder(t *testing.T) {
	const n = 200
	p := newSlotPool(n)
	all, _ := p.take(context.Background(), nil)
	if len(all) != n {
		t.Fatalf("first take: %d slots, want %d", len(all), n)
	}
	for i, s := range all {
		if s != n-1-i {
			t.Fatalf("first take = %v, want %d down to 0", all, n-1)
		}
	}
	returned := []int{130, 5, 64, 199, 63, 0, 127, 128, 70}
	for _, s := range returned {
		p.put(s)
	}
	stock, ok := p.take(context.Background(), all[:0])
	if !ok {
		t.Fatal("take failed")
	}
	var used []int
	for len(stock) > 0 {
		used = append(used, stock[len(stock)-1])
		stock = stock[:len(stock)-1]
	}
	want := slices.Sorted(slices.Values(returned))
	if !slices.Equal(used, want) {
		t.Fatalf("slots used in order %v, want %v", used, want)
	}
	free := make([]bool, n)
	p.put(42)
	p.markFree(free)
	for s, isFree := range free {
		if isFree != (s == 42) {
			t.Fatalf("markFree: slot %d free = %v, want only slot 42", s, isFree)
		}
	}
}
