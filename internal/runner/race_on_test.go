//go:build race

package runner

// raceDetector is true when the tests run under the race detector, which
// slows the collector's merging of hundreds of histograms tenfold: timing
// bounds that describe a real run do not hold then.
const raceDetector = true
