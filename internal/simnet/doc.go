// Package simnet is a deterministic simulated datagram network. Links drop,
// duplicate, delay, reorder and rate-limit datagrams according to a
// LinkConfig, drawing every random choice from one seeded generator, so a
// run is a pure function of its seed and its inputs. Time is a parameter
// (nanoseconds from an arbitrary origin): the network never reads a clock,
// which lets protocol tests drive it with a fake one and lets
// transport/memnet drive it in real time.
package simnet
