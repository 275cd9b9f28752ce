package main

import (
	"io"
	"slices"
	"testing"
)

// contractFields are the JSON names BENCH-CONTRACT.md fixes: every row of
// every scenario has them (runJSON and runNetJSON check).
var contractFields = []string{"scenario", "system", "transport", "size", "resp_size", "concurrency",
	"sessions", "duration_s", "ops", "errors", "qps", "gbps", "p50_us", "p90_us", "p99_us", "p999_us",
	"allocs_per_op", "cores"}

// erpcGridFields are the fields BENCHMARKS.md names on erpc's rows of the
// grid scenarios: the client's protocol counters over the point.
var erpcGridFields = []string{"retransmits", "nacks"}

// gridScenarios are the scenarios of package scenario, whose erpc rows
// carry erpcGridFields.
var gridScenarios = []string{"latency", "rate", "table", "bandwidth", "sessions", "loss"}

// TestScenariosJSON runs every scenario for a fraction of a second with
// -json, each server in a process of its own: every row has the
// contract's fields, erpc's rows in the grid scenarios the counters
// BENCHMARKS.md names, and each scenario's own fields and sane values (see
// each case). The testbed scenarios (incast, multipath, path, loss -testbed)
// skip, saying why, without root, iproute2 and nftables; all skip under
// -short.
func TestScenariosJSON(t *testing.T) {
	cases := []struct {
		scenario, name string
		run            func(*testing.T)
	}{
		{"latency", "udp", smokeLatency},
		{"latency", "shm", smokeShm},
		{"latency", "blocking", smokeBlocking},
		{"latency", "tls-peers", smokeTLSPeers},
		{"handshake", "default", smokeHandshake},
		{"rate", "grpc-netrpc-drpc", smokeRate},
		{"table", "raw-udp", smokeTable},
		{"bandwidth", "raw-udp-memcpy", smokeBandwidth},
		{"sessions", "erpc", smokeSessions},
		{"loss", "erpc", smokeLoss},
		{"slo", "sleep", smokeSLO},
		{"slo", "kv", smokeSLOKV},
		{"raft", "transports", smokeRaftTransports},
		{"stream", "erpc-grpc", smokeStream},
		{"incast", "testbed", incastScenario},
		{"multipath", "testbed", multipathScenario},
		{"path", "testbed", pathScenario},
		{"loss", "testbed", lossTestbedScenario},
		{"fleet", "testbed", fleetScenario},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.scenario] = true
	}
	for _, s := range scenarioNames {
		if !covered[s] {
			t.Errorf("scenario %q has no case here", s)
		}
	}
	for _, c := range cases {
		t.Run(c.scenario+"/"+c.name, c.run)
	}
}

// checkErpcGridFields checks that erpc's rows of a grid scenario have
// erpcGridFields.
func checkErpcGridFields(t *testing.T, m map[string]any) {
	t.Helper()
	if !slices.Contains(gridScenarios, m["scenario"].(string)) || m["system"] != "erpc" {
		return
	}
	for _, f := range erpcGridFields {
		if _, ok := m[f]; !ok {
			t.Errorf("erpc row without %q: %v", f, m)
		}
	}
}

// documentedCommands are the command lines BENCHMARKS.md, README.md and
// main's doc name (the binary and the shell's redirections left out).
var documentedCommands = [][]string{
	// main's doc.
	{"latency", "-size", "32,1024,65536"},
	{"rate", "-size", "32", "-c", "1,8,64,256", "-vs", "raw-udp,grpc"},
	{"table", "-quick", "-json"},
	{"bandwidth", "-size", "8M"},
	{"sessions", "-sessions", "1,1000,20000"},
	{"loss", "-loss", "0,1e-5,1e-3,1e-2"},
	{"latency", "-transport", "shm", "-vs", "raw-shm,erpc-udp"},
	{"latency", "-busy", "-size", "32", "-vs", "raw-udp,udp-floor"},
	{"bandwidth", "-transport", "shm", "-size", "1M,8M", "-vs", "raw-shm"},
	{"table", "-quick", "-plot", "docs/bench.svg"},
	{"slo", "-dist", "bimodal1", "-policy", "jbsq,hash", "-vs", "grpc", "-workers", "4", "-plot", "slo.svg"},
	{"slo", "-workload", "kv", "-mix", "0,50,95", "-server-procs", "1,2", "-vs", "grpc"},
	{"incast", "-senders", "16,50", "-plot", "docs/incast.svg"},
	{"multipath", "-fast", "250M", "-slow", "50M"},
	{"path", "-rates", "10,50,250,1000"},
	{"loss", "-testbed", "-loss", "1e-4,1e-3,1e-2", "-vs", "grpc"},
	{"stream", "-size", "32,64K", "-streams", "1,16", "-vs", "grpc"},
	{"latency", "-blocking", "-size", "32", "-rounds", "4"},
	{"latency", "-size", "32", "-vs", "erpc-tls,grpc-tls,quic,quic-stream"},
	{"rate", "-size", "32", "-c", "64", "-vs", "erpc-tls,grpc-tls,quic,quic-stream"},
	{"bandwidth", "-size", "8M", "-vs", "erpc-tls,grpc-tls,quic"},
	{"handshake", "-dials", "200"},
	{"handshake", "-dials", "200", "-vs", "erpc-tls,grpc,grpc-tls,quic,quic-stream"},
	{"fleet", "-scenarios", "kill,drain,add,slow,restart-storm", "-vs", "grpc", "-json"},
	// docs/benchmarks/fleet.md.
	{"fleet", "-servers", "4", "-rate", "2000", "-d", "5s", "-json"},
	{"fleet", "-scenarios", "slow", "-vs", "none", "-d", "3s"},
	{"fleet", "-scenarios", "restart-storm", "-storm-procs", "4", "-storm-clients", "50", "-connect-rate", "20", "-json"},
	// README.md.
	{"raft", "-transport", "shm"},
	// BENCHMARKS.md.
	{"latency", "-busy", "-size", "32", "-vs", "raw-udp,udp-plain,udp-floor", "-rounds", "10", "-d", "3s", "-json"},
	{"latency", "-size", "32", "-vs", "raw-udp,udp-floor,udp-plain", "-rounds", "10", "-d", "3s", "-json"},
	{"latency", "-transport", "shm", "-busy", "-size", "32", "-vs", "raw-shm", "-rounds", "10", "-d", "3s", "-json"},
	{"rate", "-size", "32", "-c", "64", "-vs", "raw-udp,grpc", "-rounds", "4", "-json"},
	{"rate", "-size", "32", "-c", "64", "-sessions", "16", "-vs", "raw-udp,grpc", "-rounds", "4", "-json"},
	{"rate", "-size", "32", "-c", "64", "-vs", "erpc-nocc", "-rounds", "4", "-json"},
	{"rate", "-size", "32", "-c", "1,64", "-vs", "erpc-nocc", "-rounds", "2"},
	{"latency", "-busy", "-size", "32", "-vs", "erpc-nocc", "-rounds", "10", "-d", "3s", "-json"},
	{"latency", "-busy", "-size", "32", "-vs", "raw-udp,udp-floor"},
	{"rate", "-size", "32", "-c", "64", "-vs", "raw-udp"},
	{"incast", "-vs", "", "-json"},
	{"incast", "-vs", "erpc-nocc,grpc", "-plot", "docs/incast.svg"},
	{"incast", "-plot", "docs/incast.svg"},
	{"incast", "-senders", "50", "-vs", "erpc-nocc", "-rate", "250M", "-reps", "3"},
	{"multipath"},
	{"path", "-rates", "10,50,250,1000", "-vs", "erpc-nocc,grpc", "-json"},
	{"loss", "-testbed"},
	{"latency", "-busy", "-size", "32", "-d", "2s", "-vs", "raw-udp,erpc-call,grpc"},
	{"latency", "-size", "32", "-d", "2s", "-vs", "raw-udp,erpc-call,grpc"},
	{"rate", "-size", "32", "-c", "64", "-d", "2s", "-vs", "grpc"},
	{"bandwidth", "-size", "8M", "-c", "1", "-d", "2s", "-vs", "raw-udp,grpc"},
	{"latency", "-transport", "shm", "-size", "32", "-d", "2s", "-vs", "raw-shm,erpc-udp"},
	{"bandwidth", "-transport", "shm", "-size", "1M,8M", "-c", "1", "-d", "2s", "-vs", "raw-shm,erpc-udp"},
	{"rate", "-transport", "shm", "-size", "32", "-c", "1,64", "-d", "2s", "-vs", "raw-shm"},
	{"sessions", "-sessions", "1,1000,20000", "-d", "2s"},
	{"loss", "-d", "2s"},
	{"table", "-quick", "-d", "1s", "-vs", "raw-udp,grpc", "-plot", "docs/bench.svg"},
	{"raft", "-vs", "raft-tcp,etcd-rawnode", "-d", "4s"},
	{"latency", "-transport", "shm", "-size", "32", "-vs", "raw-shm", "-busy"},
	{"latency", "-busy", "-size", "32"},
	{"latency", "-size", "32,64K", "-vs", "raw-udp", "-d", "1s"},
	{"latency", "-busy", "-size", "32", "-d", "2s", "-vs", "erpc-nocc", "-json"},
	{"rate", "-size", "32", "-c", "64", "-d", "2s", "-vs", "erpc-nocc", "-json"},
	{"slo", "-retries", "2", "-plot", "docs/slo-bimodal1.svg"},
	{"slo", "-policy", "jbsq", "-vs", "none", "-load", "1.0,2.0", "-json"},
	{"slo", "-policy", "jbsq", "-vs", "none", "-load", "1.0,2.0", "-json", "-nack=false"},
	{"slo", "-workload", "kv", "-retries", "1"},
	{"latency", "-busy", "-size", "32", "-d", "2s", "-vs", "raw-udp,grpc", "-json"},
	{"latency", "-transport", "shm", "-size", "32", "-d", "2s", "-vs", "raw-shm", "-json"},
	{"latency", "-busy", "-transport", "shm", "-size", "32", "-vs", "raw-shm,erpc-udp"},
	{"latency", "-transport", "shm", "-size", "32", "-vs", "raw-shm,erpc-udp"},
	{"raft", "-vs", "raft-tcp,etcd-rawnode", "-d", "3s"},
	{"raft", "-transport", "shm", "-vs", "all", "-d", "3s"},
}

// TestDocumentedCommandLines parses every command line the documents
// name: a flag renamed or a system dropped fails here before a reader's
// copy and paste does.
func TestDocumentedCommandLines(t *testing.T) {
	for _, args := range documentedCommands {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}
