module github.com/erpc-go/erpc

go 1.26.0

require (
	golang.org/x/sys v0.49.0
	google.golang.org/protobuf v1.36.12
)
