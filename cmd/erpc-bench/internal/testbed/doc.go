// Package testbed drives the network-namespace testbed of the incast,
// multipath and loss -testbed scenarios. internal/testnet builds the
// namespaces, bridges and shaping from a testnet.TB; TB is erpc-bench's,
// whose Fatal and Skip end the scenario and whose cleanups run when it
// returns, fails or is interrupted, so no namespace outlives the run (Run;
// a missing root or tool becomes ErrNoTestbed). It also owns "netsink",
// the testbed's server process: erpc over UDP and gRPC over TCP on one
// address, counting the bytes each sender delivers in 1 ms bins (Sink).
// For the fleet scenario it owns the fleet's testbed (Fleet: replica,
// client and DNS hosts on a Star, and the dnsmasq that answers for the
// fleet's name; fleet.go) and "fleetsrv", a replica's process
// (fleetsrv.go).
//
// It does not decide what is measured on the testbed: that is packages
// scenario/network and scenario/fleet.
package testbed
