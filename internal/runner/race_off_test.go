//go:build !race

package runner

// raceDetector is true when the tests run under the race detector.
const raceDetector = false
