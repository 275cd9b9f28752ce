package prometheus_test

import (
	"context"
	"fmt"

	"github.com/erpc-go/erpc"
	erpcprom "github.com/erpc-go/erpc/contrib/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// One handler on a server and its client, registered in a registry (a
// program would use prometheus.MustRegister and serve promhttp.Handler).
func ExampleNewStatsHandler() {
	metrics := erpcprom.NewStatsHandler()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)

	srv := erpc.NewServer()
	srv.Handle("/greet.Greeter/Hello", func(_ context.Context, req []byte) ([]byte, error) {
		return append([]byte("hello, "), req...), nil
	})
	metrics.InitializeMetrics(srv)
	ep, err := srv.Listen("mem://example-prometheus", erpc.WithStatsHandler(metrics))
	if err != nil {
		panic(err)
	}
	defer ep.Close()

	ctx := context.Background()
	s, err := erpc.Dial(ctx, "mem://example-prometheus", erpc.WithStatsHandler(metrics))
	if err != nil {
		panic(err)
	}
	resp, err := s.Call(ctx, "/greet.Greeter/Hello", []byte("prometheus"), nil)
	fmt.Println(string(resp), err)
	s.Close()
	ep.Close() // the server has counted the call

	n, _ := testutil.GatherAndCount(reg, "grpc_server_handled_total", "grpc_client_handled_total")
	fmt.Println(n, "handled series: 17 codes for the server's method, 1 for the client's call")
	// Output:
	// hello, prometheus <nil>
	// 18 handled series: 17 codes for the server's method, 1 for the client's call
}
