//go:build !race

package rocketmq

// raceDetector says the tests run under the race detector.
const raceDetector = false
