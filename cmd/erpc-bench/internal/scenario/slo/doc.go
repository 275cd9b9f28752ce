// Package slo is the slo scenario: throughput under a tail-latency SLO.
// The open-loop generator (package openloop) offers a sweep of loads to a
// server with a fixed number of workers; each point reports p50/p99/p99.9
// from the planned send times (NACKs and failures count as infinite
// latency), the throughput, the NACK fraction and the generator's lag;
// each policy's result is the highest throughput whose p99 meets the SLO.
//
// It owns its systems: the server process (server.go: erpc with its
// dispatch policies jbsq, hash or inline, and gRPC with as many workers;
// server_systems.go) and their clients (targets.go), its flags
// (flags.go), the sweep (run.go), its table (table.go) and plot
// (plot.go). It does not hold the generator (openloop) or the systems of
// the other scenarios (systems).
package slo
