module github.com/erpc-go/erpc/cmd/erpc-bench

go 1.26.0

require (
	github.com/erpc-go/erpc v0.0.0
	golang.org/x/sys v0.49.0
	google.golang.org/grpc v1.85.0
	storj.io/drpc v1.0.0
)

require (
	github.com/zeebo/errs v1.2.2 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/erpc-go/erpc => ../..
