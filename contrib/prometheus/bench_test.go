package prometheus_test

import (
	"context"
	"testing"

	"github.com/erpc-go/erpc"
	erpcprom "github.com/erpc-go/erpc/contrib/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkCall: a 32-byte call over the in-memory network, without a
// StatsHandler, with this package's on both ends, and with its handling
// time histograms on too.
func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []erpcprom.Option
		on   bool
	}{
		{"none", nil, false},
		{"prometheus", nil, true},
		{"histogram", []erpcprom.Option{erpcprom.WithHandlingTimeHistogram()}, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var srvOpts, cliOpts []erpc.Option
			if c.on {
				reg := prometheus.NewRegistry()
				sh, ch := erpcprom.NewStatsHandler(c.opts...), erpcprom.NewStatsHandler(c.opts...)
				reg.MustRegister(sh)
				srvOpts = append(srvOpts, erpc.WithStatsHandler(sh))
				cliOpts = append(cliOpts, erpc.WithStatsHandler(ch))
			}
			srv := erpc.NewServer()
			must(b, srv.Handle("/bench.Echo/Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil }))
			addr := memName(b)
			ep, err := srv.Listen(addr, srvOpts...)
			must(b, err)
			defer ep.Close()
			s, err := erpc.Dial(ctx, addr, cliOpts...)
			must(b, err)
			defer s.Close()
			req, resp := make([]byte, 32), make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				if resp, err = s.Call(ctx, "/bench.Echo/Echo", req, resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHooks: what the handler's CallBegin and CallEnd cost for one
// call, on each side.
func BenchmarkHooks(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []erpcprom.Option
	}{{"counters", nil}, {"histogram", []erpcprom.Option{erpcprom.WithHandlingTimeHistogram()}}} {
		h := erpcprom.NewStatsHandler(c.opts...)
		for _, server := range []bool{false, true} {
			side := "client"
			if server {
				side = "server"
			}
			info := erpc.CallInfo{Method: "/bench.Echo/Echo", Server: server, ReqBytes: 32}
			end := erpc.CallEnd{RespBytes: 32, Duration: 10000}
			b.Run(c.name+"/"+side, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					h.CallEnd(h.CallBegin(ctx, info), info, end)
				}
			})
		}
	}
}
