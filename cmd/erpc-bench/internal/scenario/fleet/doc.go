// Package fleet is the fleet scenario (erpc-bench fleet): a client for
// many servers (issue 31: erpc.NewClient over a resolver and a balancer)
// under steady open-loop load over a fleet of replicas on the namespace
// testbed (testbed.Fleet: replica, client and DNS hosts on one bridge),
// while the fleet changes:
//
//   - kill: one replica is killed (SIGKILL) mid-run;
//   - drain: one replica shuts down gracefully (Endpoint.Shutdown) and
//     leaves DNS;
//   - add: a new replica starts and joins DNS;
//   - slow: one replica's service time becomes ten times the others';
//   - restart-storm: every replica restarts under hundreds of clients.
//
// Each (scenario, system) is one run on a fresh fleet. The replicas are
// testbed's fleetsrv processes; the load runs in a process of its own in
// a client namespace (fleetload, load.go), so that the client resolves the
// testbed's DNS name and dials it as a deployed client would; the driver
// (run.go) changes the fleet at planned times and turns the calls' log
// (which replica served each call, when, how long it took, or that it
// failed) into the rows (analyze.go). gRPC with its round_robin policy
// over a dns:/// target is the peer row where it applies.
//
// It does not build namespaces (internal/testnet, through testbed) and
// does not own the open-loop generator (openloop).
package fleet
