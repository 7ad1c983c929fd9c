//go:build !race && linux && cgo

package cli

// raceDetector reports a build with -race, whose instrumentation
// multiplies the user CPU time each message costs.
const raceDetector = false
