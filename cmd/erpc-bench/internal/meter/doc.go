// Package meter measures one point: a configuration (sizes, calls in
// flight, sessions, loss, warm-up, duration), a client that makes calls
// until told to stop (Client), the per-goroutine recorders those calls
// report to, and the Result that comes out (calls, errors, seconds,
// allocations per call, an HDR-style latency histogram, Hist). Measure
// runs the warm-up, the measured window and the stop; Result.Absorb adds
// the rounds of one point together.
//
// It owns the measuring discipline (what counts as a measured call, when
// allocations are read) and nothing else: it does not know which systems
// exist (package systems), how points are chosen (package scenario) or
// how results are printed (package report). Watchdog and Payload are
// small helpers every layer above uses.
package meter
