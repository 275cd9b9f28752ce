// Command erpc-bench measures erpc-go beside its floor (raw UDP, raw shared
// memory) and its peers (gRPC, net/rpc, drpc; gRPC over TLS and quic-go
// beside erpc over TLS), following the project's
// benchmark contract (docs: BENCH-CONTRACT.md): same run, same machine,
// same payloads, server and client in separate pinned processes, warm-up
// discarded, per-call latency in an HDR-style histogram, and a coro_rpc
// style table or one JSON object per line.
//
// Usage:
//
//	go run ./cmd/erpc-bench latency -size 32,1024,65536
//	go run ./cmd/erpc-bench rate -size 32 -c 1,8,64,256 -vs raw-udp,grpc
//	go run ./cmd/erpc-bench table -quick -json
//	go run ./cmd/erpc-bench bandwidth -size 8M
//	go run ./cmd/erpc-bench sessions -sessions 1,1000,20000
//	go run ./cmd/erpc-bench loss -loss 0,1e-5,1e-3,1e-2
//	go run ./cmd/erpc-bench latency -blocking -size 32 -rounds 4
//	go run ./cmd/erpc-bench rate -size 32 -c 64 -vs erpc-tls,grpc-tls,quic,quic-stream
//	go run ./cmd/erpc-bench handshake -dials 200
//	go run ./cmd/erpc-bench stream -size 32,64K -streams 1,16 -vs grpc
//	go run ./cmd/erpc-bench latency -transport shm -vs raw-shm,erpc-udp
//	go run ./cmd/erpc-bench latency -transport tcp -vs grpc,netrpc,erpc-udp
//	go run ./cmd/erpc-bench latency -busy -size 32 -vs raw-udp,udp-floor
//	go run ./cmd/erpc-bench bandwidth -transport shm -size 1M,8M -vs raw-shm
//	go run ./cmd/erpc-bench table -quick -plot docs/bench.svg
//	go run ./cmd/erpc-bench slo -dist bimodal1 -policy jbsq,hash -vs grpc -workers 4 -plot slo.svg
//	go run ./cmd/erpc-bench slo -workload kv -mix 0,50,95 -server-procs 1,2 -vs grpc
//	sudo go run ./cmd/erpc-bench incast -senders 16,50 -plot docs/incast.svg
//	sudo go run ./cmd/erpc-bench multipath -fast 250M -slow 50M
//	sudo go run ./cmd/erpc-bench path -rates 10,50,250,1000
//	sudo go run ./cmd/erpc-bench loss -testbed -loss 1e-4,1e-3,1e-2 -vs grpc
//	sudo go run ./cmd/erpc-bench latency -transport xdp -vs udp,raw-udp -rounds 3
//	sudo go run ./cmd/erpc-bench fleet -scenarios kill,drain,add,slow,restart-storm -vs grpc -json
//
// -vs erpc-udp runs erpc over UDP beside erpc over the -transport chosen
// (shm or tcp, say), so "erpc shm p50 / erpc udp p50" comes out of one
// run. With ERPC_BENCH_PACKET_SIZE set to a number, erpc's endpoints use
// datagrams of that size (both ends; docs/benchmarks/tcp.md compares
// sizes over TCP). The
// bandwidth scenario always adds a "memcpy" column and JSON line: the same
// sizes copied in the client's process, the reference for GB/s.
//
// -transport xdp (latency and rate; root) runs the systems over a veth
// pair between two network namespaces that it builds and removes: the
// servers in one, the clients in the other, erpc over AF_XDP at both ends
// (transport/xdp) beside erpc over UDP (-vs udp, erpc-udp) and raw-udp on
// the same pair. Its rows carry xdp_mode, where the program runs and how
// the sockets move frames ("native/copy" over veth); ERPC_BENCH_XDP_MODE=
// generic forces generic (SKB) mode.
//
// The encrypted systems each make a self-signed ECDSA P-256 certificate
// when their server starts, which the client trusts alone: erpc-tls is
// erpc with erpc.WithTLS over UDP, grpc-tls gRPC with TLS 1.3 credentials,
// quic quic-go with a new stream per call, quic-stream quic-go with one
// long stream per client goroutine (length-prefixed messages). The
// handshake scenario times a fresh session to its first call's answer (a
// new connection, or for erpc a new endpoint and session; p50_us, p99_us
// over -dials dials per system, the systems taking turns), by default for
// erpc (plaintext), erpc-tls, grpc-tls and quic.
//
// latency -blocking measures erpc's echo p50 unloaded and while another
// session keeps 10 calls in flight to a handler that blocks 100 ms,
// registered with a plain Server.Handle (no Background): the two rows
// and their ratio, p50_rel_unloaded (the target: at most 1.2).
//
// The stream scenario measures erpc's streams beside gRPC-Go's streaming
// (a raw-bytes codec, TCP loopback): messages per second and Gb/s of N
// server streams on one session (connection) read flat out; p50_us, the
// round trip of one message on each of N bidirectional streams at once
// (ping-pong, one message in flight per stream); and a slow-consumer row,
// a stream read one message a millisecond beside one read flat out, whose
// rel_solo is the fast one's rate over that of one stream alone on the
// same session, measured in the same rounds.
//
// The slo scenario offers open-loop Poisson load to a server with a fixed
// number of workers and reports the highest throughput whose p99 stays
// within an SLO, per dispatch policy and beside gRPC.
//
// The testbed scenarios build network namespaces with internal/testnet
// and need root with iproute2 and nftables: incast (N senders at once
// through a shaped bridge port; utilisation, fairness, flow completion
// times), multipath (one session over two ECMP paths, one a fifth of the
// other), path (one shaped path at several rates: one session, then
// several sharing it) and loss -testbed (random loss by nftables on a veth). Without
// root they exit with a message saying so.
//
// The fleet scenario runs erpc.NewClient over replicas in namespaces of
// their own behind a DNS name (dnsmasq on the testbed; static:/// where it
// is not installed) under open-loop load while one replica is killed,
// drained, added or slowed, or all restart under 200 clients, beside
// gRPC's round_robin over dns:///; docs/benchmarks/fleet.md.
//
// # Where things are
//
// This package parses the scenario's name, hands its flags to the
// scenario's package, runs it and writes its plot. Which scenario runs
// where, on which systems:
//
//	scenario                    package            systems
//	latency rate table          scenario           systems: erpc erpc-call erpc-nocc erpc-udp erpc-tls raw-udp
//	                                               udp-floor udp-plain raw-shm grpc grpc-tls quic
//	                                               quic-stream netrpc drpc
//	latency -blocking           scenario           systems: erpc erpc-call (load: systems.BlockingLoad)
//	bandwidth                   scenario           the same, and memcpy
//	sessions, loss              scenario           systems: erpc erpc-call
//	handshake                   scenario           systems' Handshaker: erpc erpc-tls grpc grpc-tls quic quic-stream
//	slo                         scenario/slo       its own: erpc jbsq hash inline, grpc (load: openloop)
//	raft                        scenario/raft      its own: erpc raft-tcp etcd-rawnode
//	stream                      scenario/stream    its own: erpc grpc (servers stream-erpc, stream-grpc)
//	incast                      scenario/network   its own senders: erpc erpc-nocc grpc (server: testbed)
//	multipath                   scenario/network   its own: erpc erpc-1path erpc-spray grpc (server: testbed)
//	path                        scenario/network   its own: erpc erpc-nocc grpc (server: testbed)
//	loss -testbed               scenario/network   systems' erpc clients and grpc (server: testbed)
//	fleet                       scenario/fleet     its own: erpc erpc-rr grpc (servers: testbed's fleetsrv)
//
// Below them: meter (a point, its measurement and histogram), proc (server
// processes and pinning), report (JSON rows, tables, plots), openloop (the
// open-loop generator) and testbed (the namespace testbed and its server).
// Each package's doc.go says what it owns. This one owns only the
// command line's first word, the dispatch and the plot file; it measures
// nothing itself.
//
// Run "erpc-bench <scenario> -h" for the flags.
package main
