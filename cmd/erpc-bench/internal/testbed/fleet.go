//go:build linux

package testbed

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/erpc-go/erpc/internal/testnet"
)

// Fleet is the fleet scenario's testbed: server hosts, client hosts and a
// DNS host, each in its own namespace on one bridge (a testnet.Star whose
// hosts are given these roles: its server host, .1, runs the DNS server;
// its first Servers client hosts are the replicas; the rest run the load).
// The DNS server is dnsmasq, answering A records for Name from a hosts
// file it re-reads on SIGHUP (SetLive); where dnsmasq is not installed,
// DNS is nil and the scenario uses a static:/// target (saying so).
type Fleet struct {
	Star        *testnet.Star
	ServerNS    []string
	ServerAddrs []netip.Addr
	ClientNS    []string
	DNS         *Dnsmasq
}

// FleetName is the fleet's DNS name.
const FleetName = "fleet.erpc.test"

// NewFleet builds the testbed: servers replica hosts and clients client
// hosts. It is torn down when tb's run ends.
func NewFleet(tb *TB, servers, clients int) *Fleet {
	s := testnet.NewStar(tb, testnet.StarConfig{Clients: servers + clients})
	f := &Fleet{Star: s}
	f.ServerNS, f.ServerAddrs = s.Clients[:servers], s.ClientAddrs[:servers]
	f.ClientNS = s.Clients[servers:]
	if _, err := exec.LookPath("dnsmasq"); err == nil {
		d, err := startDnsmasq(s.Server, s.ServerAddr)
		if err != nil {
			tb.Fatalf("dnsmasq: %v", err)
		}
		tb.Cleanup(d.stop)
		f.DNS = d
	}
	return f
}

// Dnsmasq is the testbed's DNS server.
type Dnsmasq struct {
	ns    string
	Addr  netip.Addr // where it listens (port 53)
	dir   string
	hosts string
	cmd   *exec.Cmd
}

func startDnsmasq(ns string, addr netip.Addr) (*Dnsmasq, error) {
	dir, err := os.MkdirTemp("", "erpc-bench-dns-")
	if err != nil {
		return nil, err
	}
	d := &Dnsmasq{ns: ns, Addr: addr, dir: dir, hosts: filepath.Join(dir, "hosts")}
	if err := os.WriteFile(d.hosts, nil, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// No configuration file, no upstream, no /etc/hosts: it answers only
	// from the hosts file, with TTL 0 so that no cache keeps an old set,
	// and is authoritative for erpc.test (NXDOMAIN, not REFUSED, for a
	// name it does not have).
	d.cmd = exec.Command("ip", "netns", "exec", ns, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
		"--no-resolv", "--no-hosts", "--addn-hosts="+d.hosts, "--listen-address="+addr.String(),
		"--bind-interfaces", "--port=53", "--local=/erpc.test/", "--local-ttl=0", "--user=root", "--group=root", "--pid-file=")
	d.cmd.Stderr = os.Stderr
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// It is up when it answers (NXDOMAIN or an empty answer: no error
	// other than "not found").
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := d.Lookup()
		var dnsErr *net.DNSError
		if err == nil || (asDNSError(err, &dnsErr) && dnsErr.IsNotFound) {
			return d, nil
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("no answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func asDNSError(err error, target **net.DNSError) bool {
	e, ok := err.(*net.DNSError)
	if ok {
		*target = e
	}
	return ok
}

func (d *Dnsmasq) stop() {
	d.cmd.Process.Kill()
	d.cmd.Wait()
	os.RemoveAll(d.dir)
}

// Lookup asks the server for FleetName's A records, from its namespace.
func (d *Dnsmasq) Lookup() ([]netip.Addr, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var c net.Conn
		err := testnet.In(d.ns, func() (err error) {
			var dl net.Dialer
			c, err = dl.DialContext(ctx, network, net.JoinHostPort(d.Addr.String(), "53"))
			return err
		})
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ips, err := r.LookupNetIP(ctx, "ip4", FleetName)
	for i := range ips {
		ips[i] = ips[i].Unmap()
	}
	return ips, err
}

// SetLive makes FleetName resolve to addrs: the hosts file is replaced and
// dnsmasq told to re-read it (SIGHUP). It returns once the server answers
// with exactly that set.
func (d *Dnsmasq) SetLive(addrs []netip.Addr) error {
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "%s %s\n", a, FleetName)
	}
	tmp := d.hosts + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, d.hosts); err != nil {
		return err
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return err
	}
	want := slices.Clone(addrs)
	slices.SortFunc(want, netip.Addr.Compare)
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ := d.Lookup()
		slices.SortFunc(got, netip.Addr.Compare)
		if slices.Equal(got, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dnsmasq answers %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
