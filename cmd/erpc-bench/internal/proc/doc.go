// Package proc runs a system's server in a process of its own, so that
// client and server share no Go runtime: the client re-executes its own
// binary as "erpc-bench serve ...", reads "addr <address>" from it and
// then drives it with one-line commands on its stdin ("mem" and the
// system's own); the server exits when stdin closes (Kill ends it with
// SIGKILL instead: the fleet scenario's crash). Start is the
// client's side, Serve the server process's; Register makes a system's
// server available to Serve (each package that owns a server registers
// it in an init function). It also pins processes to CPUs.
//
// It does not know any system: the servers are the packages' that
// register them (systems; the slo, raft and network scenarios; testbed's
// netsink and fleetsrv; the fleet scenario's load process, fleetload).
package proc
