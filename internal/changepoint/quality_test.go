package changepoint

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// qualityCell is the outcome of many detections on series of one shift
// size and noise level.
type qualityCell struct {
	series      int // series analysed
	shifts      int // true shifts in them
	found       int // true shifts with a detection within ±2 runs
	detections  int // all change points reported
	falseAlarms int // change points not within ±2 runs of a true shift
	misplaced   int // false alarms within ±10 runs of a true shift: a shift found off its run
	onSpike     int // false alarms within ±2 runs of the injected spike
}

func (c *qualityCell) add(o qualityCell) {
	c.series += o.series
	c.shifts += o.shifts
	c.found += o.found
	c.detections += o.detections
	c.falseAlarms += o.falseAlarms
	c.misplaced += o.misplaced
	c.onSpike += o.onSpike
}

func (c qualityCell) recall() float64 {
	if c.shifts == 0 {
		return 1
	}
	return float64(c.found) / float64(c.shifts)
}

func (c qualityCell) precision() float64 {
	if c.detections == 0 {
		return 1
	}
	return float64(c.detections-c.falseAlarms) / float64(c.detections)
}

// syntheticHistory is a 60-run history of a metric of level 100 with
// normal noise of coefficient of variation cv, stepping up by shift (0.05
// is 5%) at run 30 (no step for 0), with one run a spike 50% above its
// level somewhere at least 10 runs from the step (so that a step found a
// few runs off its place is not taken for the spike). It returns the series,
// the step's index (-1 for none) and the spike's.
func syntheticHistory(rng *rand.Rand, shift, cv float64) (series []float64, step, spike int) {
	const n, at = 60, 30
	step = -1
	if shift != 0 {
		step = at
	}
	spike = rng.IntN(n)
	for spike > at-10 && spike < at+10 {
		spike = rng.IntN(n)
	}
	series = make([]float64, n)
	for i := range series {
		level := 100.0
		if step >= 0 && i >= step {
			level *= 1 + shift
		}
		series[i] = level * (1 + cv*rng.NormFloat64())
		if i == spike {
			series[i] = level * 1.5
		}
	}
	return series, step, spike
}

func near(a, b int) bool { return a-b <= 2 && b-a <= 2 }

// TestDetectionQuality measures recall and precision of Detect with its
// defaults on synthetic histories: shifts of 0, 2, 5, 10 and 20% of the
// level against noise of 1, 3 and 5% coefficient of variation (what
// repeated short benchmark runs on a busy 2-core machine show), each
// series with one 50% spike. A detection within ±2 runs of the true shift
// counts as found; any other detection is a false alarm.
func TestDetectionQuality(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 20
	}
	shifts := []float64{0, 0.02, 0.05, 0.10, 0.20}
	cvs := []float64{0.01, 0.03, 0.05}
	rng := rand.New(rand.NewPCG(2026, 11))
	cells := map[[2]float64]qualityCell{}
	var total qualityCell
	for _, shift := range shifts {
		for _, cv := range cvs {
			var c qualityCell
			for trial := range trials {
				series, step, spike := syntheticHistory(rng, shift, cv)
				cps, err := Detect(series, Options{Seed: uint64(trial)})
				if err != nil {
					t.Fatal(err)
				}
				c.series++
				if step >= 0 {
					c.shifts++
				}
				found := false
				for _, cp := range cps {
					c.detections++
					switch {
					case step >= 0 && near(cp.Index, step) && !found:
						found = true
						c.found++
					default:
						c.falseAlarms++
						if step >= 0 && cp.Index-step <= 10 && step-cp.Index <= 10 {
							c.misplaced++
						}
						if near(cp.Index, spike) {
							c.onSpike++
						}
					}
				}
			}
			cells[[2]float64{shift, cv}] = c
			total.add(c)
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "60-run series, shift at run 30, one 50%% spike each, %d series per cell, defaults (MinSegment %d, %d permutations, p <= %v)\n",
		trials, DefaultMinSegment, DefaultPermutations, DefaultMaxPValue)
	fmt.Fprintf(&b, "recall / precision (false alarms)\n")
	fmt.Fprintf(&b, "%-6s", "shift")
	for _, cv := range cvs {
		fmt.Fprintf(&b, " | %-22s", fmt.Sprintf("noise CV %g%%", 100*cv))
	}
	b.WriteString("\n")
	for _, shift := range shifts {
		fmt.Fprintf(&b, "%-6s", fmt.Sprintf("%g%%", 100*shift))
		for _, cv := range cvs {
			c := cells[[2]float64{shift, cv}]
			recall := "   -"
			if c.shifts > 0 {
				recall = fmt.Sprintf("%4.2f", c.recall())
			}
			fmt.Fprintf(&b, " | %-22s", fmt.Sprintf("%s / %4.2f (%3d)", recall, c.precision(), c.falseAlarms))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "overall: %d series, recall %.2f, precision %.2f; of %d false alarms, %d are a shift placed 3 to 10 runs off, %d are on a spike",
		total.series, total.recall(), total.precision(), total.falseAlarms, total.misplaced, total.onSpike)
	t.Log("\n" + b.String())

	for _, want := range []struct{ shift, cv float64 }{
		// Shifts of 5 noise standard deviations or more are all but always
		// found, in their place.
		{0.05, 0.01},
		{0.10, 0.01},
		{0.20, 0.01},
		{0.20, 0.03},
		{0.20, 0.05},
	} {
		c := cells[[2]float64{want.shift, want.cv}]
		if c.recall() < 0.95 || c.precision() < 0.9 {
			t.Errorf("shift %g%% at noise %g%%: recall %.2f and precision %.2f, want at least 0.95 and 0.9",
				100*want.shift, 100*want.cv, c.recall(), c.precision())
		}
	}
	// Smaller shifts are found less surely and less precisely placed (a
	// shift of 1 to 2 standard deviations lands 3 or more runs off its place
	// in about one detection in ten), which costs precision.
	if total.precision() < 0.85 {
		t.Errorf("overall precision %.2f, want at least 0.85", total.precision())
	}
	// Alarms far from any shift are false positives of the significance
	// test: each test's rate is MaxPValue (1%), and a series with a shift
	// has a test more after it is found.
	if spurious := total.falseAlarms - total.misplaced; float64(spurious) > 0.03*float64(total.series) {
		t.Errorf("%d false alarms away from any shift in %d series, want at most 3%%", spurious, total.series)
	}
}

// TestFalseAlarmRate checks the significance test's calibration on series
// with no shift and one 50% spike: under no change, shuffling loses nothing,
// so a series is flagged with probability MaxPValue (1%), spike or not, and
// a flag on the spike is rarer still.
func TestFalseAlarmRate(t *testing.T) {
	trials := 1000
	if testing.Short() {
		trials = 500
	}
	rng := rand.New(rand.NewPCG(7, 11))
	flagged, onSpike := 0, 0
	for trial := range trials {
		series, _, spike := syntheticHistory(rng, 0, 0.03)
		cps, err := Detect(series, Options{Seed: uint64(trial)})
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) > 0 {
			flagged++
		}
		for _, cp := range cps {
			if near(cp.Index, spike) {
				onSpike++
			}
		}
	}
	t.Logf("%d of %d series with no shift and a 50%% spike flagged, %d change points on the spike", flagged, trials, onSpike)
	// 2% is three standard deviations above 1% in 1000 series, two in 500.
	if flagged > trials*2/100 {
		t.Errorf("%d of %d series flagged, want about 1%% (at most 2%%)", flagged, trials)
	}
	if onSpike > trials/100 {
		t.Errorf("%d change points on the spike in %d series, want at most 1%%", onSpike, trials)
	}
}

// TestBurstsOfOutliers measures how often a burst of consecutive outliers
// (10 noise standard deviations) in a level series is reported, the figures
// the package doc quotes: a single outlier never is.
func TestBurstsOfOutliers(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 20
	}
	var b strings.Builder
	fmt.Fprintf(&b, "bursts of +10%% outliers in 1%% noise, 30 runs either side, %d series each\n", trials)
	for burst := 1; burst <= 4; burst++ {
		reported := 0
		for seed := range trials {
			s := levels(uint64(seed), 0.01, []float64{100, 110, 100}, []int{30, burst, 30})
			cps, err := Detect(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cp := range cps {
				if near(cp.Index, 30) || near(cp.Index, 30+burst) {
					reported++
					break
				}
			}
		}
		fmt.Fprintf(&b, "burst of %d: reported in %d of %d series\n", burst, reported, trials)
		if burst == 1 && reported > 0 {
			t.Errorf("a single outlier was reported as a change point in %d series", reported)
		}
	}
	t.Log("\n" + b.String())
}
