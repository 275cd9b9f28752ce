module github.com/erpc-go/erpc/cmd/protoc-gen-go-erpc

go 1.26.0

require (
	github.com/erpc-go/erpc v0.0.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/grpc/cmd/protoc-gen-go-grpc v1.6.2 // indirect
)

replace github.com/erpc-go/erpc => ../..

tool (
	google.golang.org/grpc/cmd/protoc-gen-go-grpc
	google.golang.org/protobuf/cmd/protoc-gen-go
)
