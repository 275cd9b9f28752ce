module github.com/erpc-go/erpc/contrib/raft

go 1.26.0

require github.com/erpc-go/erpc v0.0.0

replace github.com/erpc-go/erpc => ../..
