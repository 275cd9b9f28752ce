// Package systems holds the systems under test of the grid scenarios
// (latency, rate, table, bandwidth, sessions, loss), each as a server
// (proc.Impl, registered with proc) and a client (meter.Client), and
// Start, which brings up one by name:
//
//   - erpc, erpc-call, erpc-nocc, erpc-udp: erpc over the -transport (udp,
//     shm, memnet), driven by Session.Go continuations on the endpoint's
//     loop, by goroutines blocked in Session.Call, without congestion
//     control, or over UDP beside another transport (erpc.go, spin.go);
//     the erpc server's Block handler and BlockingLoad, the session that
//     keeps calls to it in flight for latency -blocking (block.go);
//   - raw-udp: the floor for UDP, erpc's sockets and batching with only a
//     window of acknowledgements (rawudp.go, rawudp_stream.go,
//     udpsock_linux.go, udpsock_batch_linux.go);
//   - udp-floor and udp-plain: one blocking socket call per datagram,
//     connected or not (udpfloor_linux.go, udpfloor_sock_linux.go);
//   - raw-shm: a shared-memory ring with spinning sides (rawshm_linux.go);
//   - grpc, netrpc, drpc: the peers over TCP, raw bytes through their
//     codecs (grpc.go, netrpc.go, drpc.go, tcp.go);
//   - erpc-tls, grpc-tls, quic, quic-stream: erpc and gRPC over TLS 1.3,
//     and quic-go with a stream per call or one long stream per client
//     goroutine, each server with a self-signed certificate made at start
//     (erpctls.go, grpc.go, quic.go, tlscert.go); Handshaker, the fresh
//     session the handshake scenario times (handshake.go);
//   - memcpy: the bandwidth scenario's in-process reference (memcpy.go).
//
// With UseVeth (-transport xdp), erpc, erpc-call, erpc-udp and raw-udp
// run over a veth pair between two namespaces instead of loopback, the
// servers in one and the clients in the other, erpc over AF_XDP when the
// transport is "xdp" (veth.go, veth_linux.go).
//
// It does not choose points or print results, and it does not hold the
// systems that only one scenario drives: the slo scenario's worker
// servers, the raft clusters, the stream servers and the testbed's
// senders live with their scenarios (package scenario/slo,
// scenario/raft, scenario/stream, scenario/network).
package systems
