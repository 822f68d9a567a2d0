//go:build race

package nsq

// raceDetector says the tests run under the race detector.
const raceDetector = true
