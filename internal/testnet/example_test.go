//go:build linux

package testnet_test

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/erpc-go/erpc/internal/testnet"
)

// How to use the testbeds in a benchmark (go test -bench Incast -run XXX).
// They stand in for the congestion-control and multipath benchmarks to come:
// raw UDP here, erpc endpoints opened with testnet.In there.

// BenchmarkIncast: each op, 8 clients send a 64 KiB burst at once to one
// server behind a 100 Mbit/s switch port with a 64 KiB buffer. Reports the
// fraction lost and the deepest queue.
func BenchmarkIncast(b *testing.B) {
	const clients, burst, size = 8, 64 << 10, 1200
	s := testnet.NewStar(b, testnet.StarConfig{
		Clients:    clients,
		Bottleneck: testnet.Shape{Rate: 100e6, Burst: 32 << 10, Limit: 64 << 10},
	})
	testnet.Boost(b) // keep other processes from stalling the senders

	var srv *net.UDPConn
	if err := testnet.In(s.Server, func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: s.ServerAddr.AsSlice(), Port: 9000})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	go func() { // a sink
		buf := make([]byte, 2048)
		for {
			if _, err := srv.Read(buf); err != nil {
				return
			}
		}
	}()
	conns := make([]*net.UDPConn, clients)
	for i, ns := range s.Clients {
		if err := testnet.In(ns, func() (err error) {
			conns[i], err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: s.ServerAddr.AsSlice(), Port: 9000})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}

	sm, err := s.Bottleneck().StartSampler(time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	before := s.Stats(b)
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() {
				buf := make([]byte, size)
				for range burst / size {
					c.Write(buf)
				}
			})
		}
		wg.Wait()
		for s.Stats(b).Backlog > 0 { // until the queue has drained
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	samples, err := sm.Stop()
	if err != nil {
		b.Fatal(err)
	}
	st := s.Stats(b).Sub(before)
	var maxq uint32
	for _, x := range samples {
		maxq = max(maxq, x.Backlog)
	}
	b.ReportMetric(float64(st.Drops)/float64(st.Drops+st.Packets), "lost/pkt")
	b.ReportMetric(float64(maxq), "B-maxqueue")
}

// BenchmarkTwoPath: one flow per path for 200 ms per op, path 0 shaped to
// 50 Mbit/s; reports what each path delivered.
func BenchmarkTwoPath(b *testing.B) {
	p := testnet.NewTwoPath(b, testnet.TwoPathConfig{})
	p.ShapePath(b, 0, testnet.Shape{Rate: 50e6})
	ports := p.SpreadPorts(b, 2, 9000) // ports[0] hashes onto path 0, ports[1] onto path 1
	testnet.Boost(b)

	dst := netip.AddrPortFrom(p.Service, 9000)
	var srv *net.UDPConn
	if err := testnet.In(p.B, func() (err error) {
		srv, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(dst))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var mu sync.Mutex
	got := map[uint16]int{}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			mu.Lock()
			got[from.Port()] += n
			mu.Unlock()
		}
	}()
	var conns [2]*net.UDPConn
	for i, port := range ports {
		// Bind to the unspecified address: the ECMP hash then picks the path.
		if err := testnet.In(p.A, func() (err error) {
			conns[i], err = net.ListenUDP("udp4", &net.UDPAddr{Port: int(port)})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}

	const d = 200 * time.Millisecond
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() {
				buf := make([]byte, 1200)
				for start := time.Now(); time.Since(start) < d; {
					for range 20 { // 20 datagrams every 0.5 ms: about 390 Mbit/s offered
						c.WriteToUDPAddrPort(buf, dst)
					}
					time.Sleep(500 * time.Microsecond)
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	secs := (time.Duration(b.N) * d).Seconds()
	b.ReportMetric(float64(got[ports[0]])*8/secs/1e6, "Mbit/s-path0")
	b.ReportMetric(float64(got[ports[1]])*8/secs/1e6, "Mbit/s-path1")
}
