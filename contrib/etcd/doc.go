// Package etcdresolver resolves "etcd:///prefix" targets for erpc's fleet
// client from an etcd cluster (go.etcd.io/etcd/client/v3): each key under
// the prefix is one server.
//
//	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.5:2379"}})
//	etcdresolver.Register(cli)
//	c, err := erpc.NewClient("etcd:////services/db/")
//
// # Targets and values
//
// The target's endpoint is the key prefix, verbatim: "etcd:///services/db/"
// watches keys starting "services/db/", and "etcd:////services/db/" (four
// slashes) keys starting "/services/db/". The authority must be empty: the
// client given to New says which cluster. A key's value is the server's
// address as erpc.Dial takes it ("10.0.0.1:31850", "[fd00::1]:31850",
// "db-1.internal:31850", "shm:///run/db.sock"), or a JSON object:
//
//	{"addr": "10.0.0.1:31850", "weight": 3, "zone": "eu-west-1a", "attrs": {"version": "2"}}
//
// with weight, zone and attrs optional (resolver.Address's fields). A key
// whose value is neither is left out of the set and reported, by key, with
// Watcher.Error. Servers typically write their key with a lease they keep
// alive, so a crashed server's key expires and it leaves the set.
//
// # Design
//
// One goroutine per target: a Get of the prefix (reported as the whole
// set), then a Watch from the revision after the Get's, applying each
// batch of events to the set and reporting it when it changed. A watch
// that ends with an error (its revision compacted, or cancelled for a lost
// leader: the watch asks for one, WithRequireLeader, so a member cut off
// from its cluster does not serve a stale set) starts over with a Get, as
// does ResolveNow, at most once a second (the client calls ResolveNow
// when dials fail, many at once when a server restarts). A failed Get is
// reported with Watcher.Error, keeps the last set, and is retried after an
// exponential backoff (100 ms doubling to 10 s, ±20 % jitter). While the
// cluster is unreachable clientv3's Watch waits, reconnects and resumes by
// itself, with no error to report; a ResolveNow then makes a Get, whose
// failure is reported.
//
// The tests run against a real etcd started from PATH on free loopback
// ports (Debian: the etcd-server package), and skip saying so without it.
package etcdresolver
