//go:build linux

package testnet

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const dport = 9000

// TestTwoPathPrediction checks PathOf against the link counters, for
// unconnected and connected sockets from a handful of source ports, and
// that the port-to-path map depends only on the seed.
func TestTwoPathPrediction(t *testing.T) {
	t0 := time.Now()
	p := NewTwoPath(t, TwoPathConfig{})
	t.Logf("setup: %v", time.Since(t0))
	ports := []uint16{40001, 40002, 40003, 40004}
	ports = append(ports, p.SpreadPorts(t, 4, dport)...)
	pred, err := p.PathsOf(dport, ports...)
	if err != nil {
		t.Fatal(err)
	}
	newSink(t, p.B, netip.AddrPortFrom(p.Service, dport))
	dst := netip.AddrPortFrom(p.Service, dport)

	// measure sends 100 datagrams from a fresh socket and reads which
	// path's counter moved.
	measure := func(laddr netip.AddrPort, connect bool) int {
		t.Helper()
		s := newSender(t, p.A, laddr, dst, connect)
		defer s.conn.Close()
		before := p.Counters(t)
		sent := 0
		for range 100 {
			var err error
			if connect {
				_, err = s.conn.Write([]byte("measure"))
			} else {
				_, err = s.conn.WriteToUDPAddrPort([]byte("measure"), dst)
			}
			if err == nil {
				sent++
			}
		}
		for range 50 {
			after := p.Counters(t)
			d := [2]uint64{after[0].TxPackets - before[0].TxPackets, after[1].TxPackets - before[1].TxPackets}
			for i := range 2 {
				if d[i] >= uint64(sent) && d[1-i] < uint64(sent)/2 {
					return i
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("port %v: no path carried the %d datagrams", laddr, sent)
		return -1
	}

	var mapText []string
	var hits, total int
	for i, port := range ports {
		laddr := netip.AddrPortFrom(netip.IPv4Unspecified(), port)
		un := measure(laddr, false)
		co := measure(laddr, true)
		probe := p.ProbePath(t, port, dport)
		mapText = append(mapText, fmt.Sprintf("%d->%d", port, un))
		for _, m := range []int{un, co, probe} {
			total++
			if m == pred[i] {
				hits++
			}
		}
		if un != pred[i] || co != pred[i] || probe != pred[i] {
			t.Errorf("port %d: PathOf says path %d; measured: unconnected %d, connected %d, ProbePath %d", port, pred[i], un, co, probe)
		}
	}
	t.Logf("seed %d: port->path %s", p.Seed, strings.Join(mapText, " "))
	t.Logf("prediction matched the counters in %d of %d cases", hits, total)
	// SpreadPorts' ports alternate.
	for i := range 4 {
		if pred[4+i] != i%2 {
			t.Errorf("SpreadPorts: port %d on path %d, want %d", ports[4+i], pred[4+i], i%2)
		}
	}

	// A socket bound to a link address: informational (kernel dependent).
	for i := range 2 {
		for _, port := range ports[:2] {
			got := measure(netip.AddrPortFrom(p.AddrA[i], port), false)
			t.Logf("bound to %v (path %d's address) port %d: path %d", p.AddrA[i], i, port, got)
		}
	}

	if !p.SeedFixed {
		return
	}
	// The same seed (and service address) gives the same map in a new
	// TwoPath, another seed another one.
	many := make([]uint16, 32)
	for i := range many {
		many[i] = uint16(30000 + i)
	}
	want, err := p.PathsOf(dport, many...)
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewTwoPath(t, TwoPathConfig{}).PathsOf(dport, many...)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewTwoPath(t, TwoPathConfig{Seed: 777}).PathsOf(dport, many...)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want, again) {
		t.Errorf("same seed, different map:\n%v\n%v", want, again)
	}
	if slices.Equal(want, other) {
		t.Errorf("seeds %d and 777 give the same map for 32 ports: %v", DefaultSeed, want)
	}
}

// TestTwoPathShaped: path 0 shaped to 50 Mbit/s. A flow hashed onto it gets
// about that; a flow on path 1 gets much more.
func TestTwoPathShaped(t *testing.T) {
	const (
		rate     = 50e6
		offered  = 250e6 // per flow
		payload  = 1200
		warm     = 200 * time.Millisecond
		duration = 1200 * time.Millisecond
	)
	Boost(t)
	p := NewTwoPath(t, TwoPathConfig{})
	p.ShapePath(t, 0, Shape{Rate: rate, Burst: rate / 8 * 0.020}) // 20 ms: see testIncast
	ports := p.SpreadPorts(t, 2, dport)                           // ports[i] on path i
	dst := netip.AddrPortFrom(p.Service, dport)
	sk := newSink(t, p.B, dst)
	c0, q0 := p.Counters(t), p.PathQdisc(0)
	qs0, err := q0.Stats()
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	var sent [2]int
	for i, port := range ports {
		s := newSender(t, p.A, netip.AddrPortFrom(netip.IPv4Unspecified(), port), dst, false)
		wg.Go(func() {
			n, err := s.run(dst, payload, offered, duration)
			if err != nil {
				t.Error(err)
			}
			sent[i] = n
		})
	}
	time.Sleep(warm)
	_, a := sk.snapshot()
	ta := time.Now()
	wg.Wait()
	_, b := sk.snapshot()
	window := time.Since(ta)
	time.Sleep(50 * time.Millisecond)
	c1 := p.Counters(t)
	qs1, err := q0.Stats()
	if err != nil {
		t.Fatal(err)
	}
	qs := qs1.Sub(qs0)

	var got [2]float64
	for i, port := range ports {
		got[i] = mbit(b[port].wire-a[port].wire, window)
		t.Logf("path %d, port %d: sent %d datagrams, sink %.1f Mbit/s; link tx %d packets", i, port, sent[i], got[i], c1[i].TxPackets-c0[i].TxPackets)
	}
	t.Logf("path 0 shaper: %v", qs)
	if math.Abs(got[0]-rate/1e6) > 0.15*rate/1e6 {
		t.Errorf("shaped path: %.1f Mbit/s, want %.0f ± 15 %%", got[0], rate/1e6)
	}
	if got[1] < 3*got[0] {
		t.Errorf("unshaped path: %.1f Mbit/s, want at least 3 x the shaped path's %.1f", got[1], got[0])
	}
	if qs.Drops == 0 {
		t.Errorf("path 0's shaper dropped nothing")
	}
	// Each flow's packets left by its own path: path 1 carried (nearly) all
	// of port 1's datagrams and path 0 only what its shaper let through.
	_, fin := sk.snapshot()
	if d := c1[1].TxPackets - c0[1].TxPackets; d < uint64(sent[1]) || d > uint64(sent[1])+10 {
		t.Errorf("path 1 sent %d packets, flow 1 sent %d", d, sent[1])
	}
	if d := c1[0].TxPackets - c0[0].TxPackets; d < fin[ports[0]].pkts || d > fin[ports[0]].pkts+10 {
		t.Errorf("path 0 sent %d packets, sink got %d of flow 0", d, fin[ports[0]].pkts)
	}
}

// TestTwoPathTCP checks TCPPathsOf against the link counters: a connection
// from each of a handful of source ports sends 64 KiB, and the path that
// carried it is the one predicted.
func TestTwoPathTCP(t *testing.T) {
	p := NewTwoPath(t, TwoPathConfig{})
	var lis net.Listener
	if err := In(p.B, func() (err error) {
		lis, err = net.Listen("tcp4", netip.AddrPortFrom(p.Service, dport).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	ports := []uint16{41001, 41002, 41003, 41004, 41005, 41006}
	pred, err := p.TCPPathsOf(dport, ports...)
	if err != nil {
		t.Fatal(err)
	}
	for i, port := range ports {
		before := p.Counters(t)
		var c net.Conn
		if err := In(p.A, func() (err error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{Port: int(port)}}
			c, err = d.Dial("tcp4", netip.AddrPortFrom(p.Service, dport).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
		after := p.Counters(t)
		d0, d1 := after[0].TxBytes-before[0].TxBytes, after[1].TxBytes-before[1].TxBytes
		got := 0
		if d1 > d0 {
			got = 1
		}
		if max(d0, d1) < 64<<10 || min(d0, d1) > 16<<10 || got != pred[i] {
			t.Errorf("port %d: TCPPathsOf says path %d; bytes out of path 0 %d, path 1 %d", port, pred[i], d0, d1)
		}
	}
	t.Logf("port->path over TCP: %v -> %v", ports, pred)
}

// TestTwoPathClient checks ClientPathsOf against the link counters for
// sockets bound to the Client address, and that B's answers reach them.
func TestTwoPathClient(t *testing.T) {
	p := NewTwoPath(t, TwoPathConfig{})
	var echo *net.UDPConn
	if err := In(p.B, func() (err error) {
		echo, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Service, dport)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			echo.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	ports := []uint16{42001, 42002, 42003, 42004, 42005, 42006}
	pred, err := p.ClientPathsOf(dport, ports...)
	if err != nil {
		t.Fatal(err)
	}
	seen := [2]bool{}
	for i, port := range ports {
		var c *net.UDPConn
		if err := In(p.A, func() (err error) {
			c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Client, port)))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		before := p.Counters(t)
		const n = 50
		got := 0
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		for range n {
			if _, err := c.WriteToUDPAddrPort([]byte("client"), netip.AddrPortFrom(p.Service, dport)); err != nil {
				t.Fatal(err)
			}
			if _, from, err := c.ReadFromUDPAddrPort(buf); err == nil && from.Addr() == p.Service {
				got++
			}
		}
		c.Close()
		after := p.Counters(t)
		d0, d1 := after[0].TxPackets-before[0].TxPackets, after[1].TxPackets-before[1].TxPackets
		path := 0
		if d1 > d0 {
			path = 1
		}
		seen[path] = true
		if max(d0, d1) < n || min(d0, d1) > n/5 || path != pred[i] || got != n {
			t.Errorf("port %d: ClientPathsOf says path %d; packets out of path 0 %d, path 1 %d; %d of %d answered", port, pred[i], d0, d1, got, n)
		}
	}
	if !seen[0] || !seen[1] {
		t.Logf("all %d ports hashed onto one path: %v", len(ports), pred)
	}
	t.Logf("from %v, port->path: %v -> %v", p.Client, ports, pred)
}
