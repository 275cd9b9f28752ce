module github.com/erpc-go/erpc/cmd/erpc

go 1.26.0

require (
	github.com/erpc-go/erpc v0.0.0
	google.golang.org/protobuf v1.36.12
)

require golang.org/x/sys v0.49.0 // indirect

replace github.com/erpc-go/erpc => ../..
