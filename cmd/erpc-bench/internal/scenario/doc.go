// Package scenario holds what every scenario shares and the grid
// scenarios themselves. Config is the parsed command line; Bench is one
// run (its output, the server's CPU, the systems that failed) with Start
// and Measure, which bring up a system of package systems and measure one
// point on it, in rounds that alternate the systems (MeasureRounds).
// ParseGridFlags parses, and RunGrid, RunSessions and RunLoss run, the
// scenarios that measure a grid of sizes and concurrencies on the
// systems: latency, rate, table, bandwidth (with memcpy beside), sessions
// and loss (erpc only); RunBlocking runs latency -blocking (erpc only,
// each point unloaded and beside a session of blocking calls);
// RunHandshake times fresh sessions (handshake.go).
//
// The other scenarios live in subpackages, each with its own flags and
// systems: slo (open-loop load under a tail-latency SLO), raft (a
// replicated key-value store), stream (erpc's streams beside gRPC's) and
// network (incast, multipath and loss
// -testbed on the namespace testbed). main dispatches to them.
package scenario
