// Package capture reads a live topic without disturbing it and records
// its shape as statistics (never a payload or a key): the rate per
// second, the size distribution, the key space and its skew (a
// HyperLogLog count of distinct keys, a space-saving sketch of the most
// frequent, a fitted Zipf exponent), header sizes, how sampled payloads
// compress with each codec, and the spread over partitions. It writes
// them as capture.json, an HTML page, and a workload (with its rate curve
// file) that replays the shape with 'brokerbench run'.
package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/brokerbench/brokerbench/internal/payload"
	"github.com/brokerbench/brokerbench/internal/workload"
)

// Source reads a topic as it is written until ctx ends, then returns
// nil: it calls started once with the topic's partition count, then each
// for every message, all from the goroutine that called it.
type Source func(ctx context.Context, started func(partitions int), each func(Record)) error

// Options say what to capture, for how long and where to write it.
type Options struct {
	Topic string
	// Duration bounds the capture (at most MaxDuration); the capture
	// ends sooner when the ctx given to Run ends.
	Duration time.Duration
	// OutDir is the folder the files are written to, made if missing.
	OutDir string
	Source Source
	// Log receives what the capture is doing; nil discards it.
	Log io.Writer
}

// The files a capture writes in its folder.
const (
	ShapeFile    = "capture.json"
	PageFile     = "capture.html"
	WorkloadFile = "workload.yaml"
	CurveFile    = "rate.csv"
)

// Result is a finished capture.
type Result struct {
	Shape *Shape
	// Files are the paths written.
	Files []string
	// Notes say where the replay departs from the capture.
	Notes []string
}

// Run captures o.Topic for o.Duration, or until ctx ends (a capture that
// is interrupted writes what it read, marked Interrupted), and writes
// its files. Bad options are errors wrapping workload.ErrInvalid; a
// capture that read no message writes capture.json and the page, and
// returns ErrNothingCaptured.
func Run(ctx context.Context, o Options) (*Result, error) {
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	switch {
	case o.Topic == "":
		return nil, fmt.Errorf("%w: no topic: name the topic to capture with --topic", workload.ErrInvalid)
	case o.Duration <= 0 || o.Duration > MaxDuration:
		return nil, fmt.Errorf("%w: --duration %v: must be above 0 and at most %v", workload.ErrInvalid, o.Duration, MaxDuration)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: output folder: %w", workload.ErrInvalid, err)
	}
	obs := NewObserver(1)
	readCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	started := time.Now()
	var read atomic.Int64
	stopProgress := progress(readCtx, log, started, o.Duration, &read)
	err := o.Source(readCtx, func(partitions int) {
		obs.Partitions = partitions
		fmt.Fprintf(log, "capture: reading %s (%d partitions) from its end for %v; Ctrl-C ends it and writes what was read\n", o.Topic, partitions, o.Duration)
	}, func(r Record) {
		obs.Observe(r)
		read.Add(1)
	})
	stopProgress()
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", o.Topic, err)
	}
	ended := time.Now()
	shape := obs.Shape(o.Topic, started, ended, ctx.Err() != nil)
	fmt.Fprintf(log, "capture: %d messages in %.0f s\n", shape.Messages, shape.Seconds)
	return write(o.OutDir, shape)
}

// progressEvery is how often a capture says how far it is.
const progressEvery = 10 * time.Second

// progress says on log, every progressEvery until ctx ends, how long the
// capture has read of its duration and how many messages (read); the
// function it returns stops it and waits until it has.
func progress(ctx context.Context, log io.Writer, started time.Time, duration time.Duration, read *atomic.Int64) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case now := <-tick.C:
				fmt.Fprintf(log, "capture: %v of %v, %d messages\n", now.Sub(started).Round(time.Second), duration, read.Load())
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// write writes the files of shape into dir.
func write(dir string, shape *Shape) (*Result, error) {
	res := &Result{Shape: shape}
	put := func(name string, data []byte) error {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		if !slices.Contains(res.Files, path) {
			res.Files = append(res.Files, path)
		}
		return nil
	}
	notes, replayErr := writeReplay(dir, shape, put)
	if replayErr != nil && !errors.Is(replayErr, ErrNothingCaptured) {
		return nil, replayErr
	}
	res.Notes = notes
	data, err := json.MarshalIndent(shape, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ShapeFile, err)
	}
	page, err := shape.Page(res.Notes)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(put(ShapeFile, append(data, '\n')), put(PageFile, page)); err != nil {
		return nil, err
	}
	return res, replayErr
}

// writeReplay writes the replay of shape with put and checks that it
// loads, and that its payloads can be made, as a run will make them:
// a compressibility payloads of the replay's sizes cannot reach is left
// out (and a note says so). It returns the replay's notes.
func writeReplay(dir string, shape *Shape, put func(name string, data []byte) error) ([]string, error) {
	name := "capture-" + shape.Topic
	replay, err := shape.Replay(name, CurveFile, true)
	if err != nil {
		return nil, err
	}
	notes := replay.Notes
	for {
		if err := errors.Join(put(CurveFile, replay.Curve), put(WorkloadFile, replay.Workload)); err != nil {
			return nil, err
		}
		w, err := workload.Load(filepath.Join(dir, WorkloadFile))
		if err != nil {
			return nil, fmt.Errorf("the replay workload does not load: %w", err)
		}
		if w.Compressibility == nil {
			return notes, nil
		}
		_, err = payload.Generate(payload.Spec{Sizes: *w.MessageSizes, PoolSize: w.PayloadPoolSize, Compress: w.Compressibility, Seed: w.Seed})
		if err == nil {
			return notes, nil
		}
		notes = append(notes, fmt.Sprintf("the replay's payloads are random: %v", err))
		if replay, err = shape.Replay(name, CurveFile, false); err != nil {
			return nil, err
		}
	}
}
