// Package network holds the scenarios that run on the namespace testbed
// (package testbed; root with iproute2 and nftables):
//
//   - incast: N senders at once through a shaped bridge port
//     (utilisation, Jain's fairness, flow completion times); erpc,
//     erpc-nocc and gRPC senders (incast*.go);
//   - multipath: one session over two ECMP paths, one a fifth of the
//     other; erpc, erpc-1path, erpc-spray and gRPC (multipath*.go);
//   - path: one shaped path at each of several rates, one session and
//     then several sharing it; erpc, erpc-nocc and gRPC (path*.go);
//   - loss -testbed: the loss scenario over a veth with nftables dropping
//     packets both ways; erpc and gRPC (loss.go).
//
// It owns those scenarios' flags (flags.go; loss -testbed uses the grid
// flags), senders, tables and the incast plot. Its server is testbed's
// netsink.
package network
