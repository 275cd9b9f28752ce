// Package resolver turns a target name into the set of server addresses
// behind it and keeps that set current, for erpc's fleet client
// (erpc.NewClient). Its shape is gRPC's: a Builder per scheme makes a
// Resolver per target, which reports whole address sets to a Watcher
// whenever they change, and re-resolves when asked (ResolveNow, which the
// client calls when dials fail).
//
// Schemes built in: "passthrough" (a target without a scheme: erpc.Dial
// resolves it), "static" (a fixed list) and "dns" (A/AAAA, or SRV when
// asked, re-resolved on a period). Contrib modules add etcd and
// Kubernetes EndpointSlices, with their real clients.
package resolver
