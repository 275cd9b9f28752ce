// Package resolver turns a target name into the set of server addresses
// behind it and keeps that set current, for erpc's fleet client
// (erpc.NewClient). Its shape is gRPC's: a Builder per scheme makes a
// Resolver per target, which reports whole address sets to a Watcher
// whenever they change, and re-resolves when asked (ResolveNow, which the
// client calls when dials fail).
//
// Schemes built in, registered by default (standard library only):
//
//   - "passthrough": a target without a scheme, or with one of the
//     transports erpc.Dial takes (udp://, shm://, mem://): one address,
//     the target itself, reported once; erpc.Dial resolves the name.
//   - "static": static:///10.0.0.1:31850,db2:31850, a fixed list; a
//     malformed entry fails Build with an error naming it.
//   - "dns": A/AAAA (dns:///name:port), or SRV (dns:///_service._udp.name:
//     an endpoint without a port whose first label starts with '_'), from
//     the system's DNS or the server the authority names
//     (dns://10.0.0.53/name:port). See NewDNSBuilder for the forms and the
//     options.
//
// Contrib modules add etcd (contrib/etcd, a key prefix watched) and
// Kubernetes EndpointSlices (contrib/k8s), with their real clients. A
// headless Kubernetes Service's DNS name works through "dns" as well.
//
// # The dns resolver
//
// One goroutine per target looks the name up at once, then every period
// (30 s), and at once on ResolveNow, but never twice within the minimum
// interval (1 s): the client calls ResolveNow whenever dials fail, and a
// restarting server fails many at once. A failed look-up is reported with
// Watcher.Error, the last good set stays, and the next try waits an
// exponential backoff (1 s doubling up to the period) with ±20 % jitter so
// the clients of one DNS server do not retry in step. A set is reported
// only when it changed, in any order (Equal). An empty answer counts as a
// failure: a name that resolves to nothing more likely means a broken
// zone than a fleet of zero. A literal IP endpoint is reported once with
// no look-up. The clock and the look-up are options, so the tests run the
// periods, backoffs and bursts on a fake clock with scripted answers, and
// one test asks a small DNS server of its own over loopback.
//
// # Writing a resolver
//
// A Resolver reports through a Reporter (NewReporter): it calls the
// Watcher from one goroutine at a time, drops repeats of the last set, and
// calls nothing once closed. Build returns before the first report, so a
// client may hold its own lock around Build. Close waits for a Watcher call
// in progress: a Watcher method must not call Close on its own resolver.
package resolver
