// Package prometheus exports metrics of erpc calls to Prometheus, under
// the names and labels of go-grpc-middleware's (v2) gRPC metrics, so the
// dashboards and alerts written for those work for erpc. Its StatsHandler
// is both an erpc.StatsHandler and a prometheus.Collector: register it,
// and install it with erpc.WithStatsHandler on the endpoints to watch.
//
//	import (
//		"github.com/prometheus/client_golang/prometheus"
//		"github.com/prometheus/client_golang/prometheus/promhttp"
//
//		"github.com/erpc-go/erpc"
//		erpcprom "github.com/erpc-go/erpc/contrib/prometheus"
//	)
//
//	metrics := erpcprom.NewStatsHandler(erpcprom.WithHandlingTimeHistogram())
//	prometheus.MustRegister(metrics)
//	http.Handle("/metrics", promhttp.Handler())
//
//	// A server: register its handlers, then its series, then serve.
//	srv := erpc.NewServer()
//	srv.Handle("/greet.Greeter/Hello", hello)
//	metrics.InitializeMetrics(srv)
//	ep, err := srv.Listen("0.0.0.0:31850", erpc.WithTLS(cfg), erpc.WithStatsHandler(metrics))
//
//	// A client (the same handler may watch both: the metrics' names say
//	// which side counted).
//	s, err := erpc.Dial(ctx, "udp://10.0.0.1:31850", erpc.WithTLS(cfg), erpc.WithStatsHandler(metrics))
//
// # Metrics
//
// go-grpc-middleware's, with the labels grpc_type (always "unary": erpc's
// calls are), grpc_service and grpc_method:
//
//	grpc_server_started_total       calls started on the server
//	grpc_server_handled_total       calls completed, by grpc_code too
//	grpc_server_msg_received_total  request messages received
//	grpc_server_msg_sent_total      response messages sent
//	grpc_server_handling_seconds    histogram of the calls' durations (option)
//	grpc_client_started_total, grpc_client_handled_total,
//	grpc_client_msg_received_total, grpc_client_msg_sent_total,
//	grpc_client_handling_seconds    the same, counted by the client
//
// As go-grpc-middleware does for unary calls, a call sends one message
// each way, counted whether or not it succeeded. grpc_code is the code's
// name, which is gRPC's: "OK", "NotFound", "DeadlineExceeded"... The
// histograms are off by default (WithHandlingTimeHistogram), as in
// go-grpc-middleware; their default buckets, DefBuckets, start at 10 µs.
//
// erpc's own:
//
//	erpc_client_retransmissions_total  request packets the client sent
//	                                   again; grpc_type, grpc_service, grpc_method
//	erpc_server_sessions_open          gauge: sessions clients opened to the server
//	erpc_client_sessions_open          gauge: sessions the client dialed
//	erpc_server_sessions_opened_total  sessions opened, ever
//	erpc_client_sessions_opened_total
//	erpc_server_session_failures_total sessions that ended with an error (a
//	erpc_client_session_failures_total client's failed dials too), by grpc_code
//
// # Services and methods
//
// A generated stub's method, "/greet.Greeter/Hello", is grpc_service
// "greet.Greeter" and grpc_method "Hello" (split at the last slash); a
// method named without a service, "Echo", is grpc_service "" and
// grpc_method "Echo" (SplitMethod).
//
// # Cost
//
// A method's series are looked up once, then kept: a call costs a few
// atomic additions and two map lookups, and allocates nothing. See
// BenchmarkCall.
package prometheus
