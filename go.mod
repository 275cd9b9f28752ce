module github.com/erpc-go/erpc

go 1.26
