package capture

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brokerbench/brokerbench/internal/payload"
)

// steadySource sends 50 messages a second, each of 100 bytes with one of
// 10 keys on one of 2 partitions, until ctx ends.
func steadySource(ctx context.Context, started func(int), each func(Record)) error {
	started(2)
	value := bytes.Repeat([]byte("0123456789"), 10)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		each(Record{Partition: int32(i % 2), Key: []byte{byte(i % 10)}, Value: value, Time: time.Now(), Codec: "none"})
	}
}

// makeCodecsOutsideBubbles makes payload's shared zstd encoder, whose
// goroutines and channels must not belong to one test's synctest bubble
// when another uses them.
func makeCodecsOutsideBubbles(t *testing.T) {
	if _, err := payload.Ratio([][]byte{make([]byte, payload.HeaderSize)}, "zstd"); err != nil {
		t.Fatal(err)
	}
}

// TestRunEndsAtItsDuration: a capture reads for its duration, says how
// far it is every 10 s, and writes its files with the rate it read.
func TestRunEndsAtItsDuration(t *testing.T) {
	makeCodecsOutsideBubbles(t)
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		res, err := Run(t.Context(), Options{Topic: "steady", Duration: 25 * time.Second, OutDir: t.TempDir(), Source: steadySource, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Shape
		if s.Interrupted || s.Seconds != 25 || len(res.Files) != 4 {
			t.Errorf("interrupted %v after %v s, files %v", s.Interrupted, s.Seconds, res.Files)
		}
		if s.Rate.Mean != 50 || s.Partitions.Count != 2 || s.Keys.Distinct != 10 || !s.Keys.Uniform {
			t.Errorf("rate %+v, partitions %+v, keys %+v", s.Rate, s.Partitions, s.Keys)
		}
		if got := strings.Count(log.String(), "s of 25s, "); got != 2 { // at 10 s and 20 s
			t.Errorf("%d progress lines, want 2:\n%s", got, log.String())
		}
	})
}

// TestRunInterrupted: a capture whose context ends before its duration
// (Ctrl-C) writes what it read, marked interrupted.
func TestRunInterrupted(t *testing.T) {
	makeCodecsOutsideBubbles(t)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		res, err := Run(ctx, Options{Topic: "steady", Duration: time.Hour, OutDir: t.TempDir(), Source: steadySource})
		if err != nil {
			t.Fatal(err)
		}
		if s := res.Shape; !s.Interrupted || s.Seconds != 5 || s.Messages < 240 || len(res.Files) != 4 {
			t.Errorf("interrupted %v after %v s, %d messages, files %v", s.Interrupted, s.Seconds, s.Messages, res.Files)
		}
	})
}
