package erpc_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
)

// reviewEchoServer is the TCP review tests' server: Echo only. It is here,
// not in a Linux-only file, because the portable tests use it too.
func reviewEchoServer(t *testing.T) *erpc.Server {
	t.Helper()
	srv := erpc.NewServer()
	if err := srv.Handle("Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }); err != nil {
		t.Fatal(err)
	}
	return srv
}
