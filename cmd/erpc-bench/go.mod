module github.com/erpc-go/erpc/cmd/erpc-bench

go 1.26.0

require (
	github.com/erpc-go/erpc v0.0.0
	github.com/erpc-go/erpc/contrib/raft v0.0.0
	github.com/erpc-go/erpc/transport/xdp v0.0.0
	github.com/hashicorp/raft v1.7.3
	github.com/quic-go/quic-go v0.65.0
	golang.org/x/sys v0.49.0
	google.golang.org/grpc v1.85.0
	storj.io/drpc v1.0.0
)

require (
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/hashicorp/go-hclog v1.6.2 // indirect
	github.com/hashicorp/go-immutable-radix v1.0.0 // indirect
	github.com/hashicorp/go-metrics v0.5.4 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.2 // indirect
	github.com/hashicorp/golang-lru v0.5.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
)

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/zeebo/errs v1.2.2 // indirect
	go.etcd.io/raft/v3 v3.7.0 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/erpc-go/erpc => ../..

replace github.com/erpc-go/erpc/contrib/raft => ../../contrib/raft

replace github.com/erpc-go/erpc/transport/xdp => ../../transport/xdp
