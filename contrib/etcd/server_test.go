package etcdresolver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdServer is a real single-member etcd started by the test on free
// loopback ports with a temporary data directory, killed at the end.
type etcdServer struct {
	t         *testing.T
	bin, dir  string
	clientURL string
	peerURL   string
	cmd       *exec.Cmd
	exited    chan struct{}
}

// startEtcd starts etcd from PATH, or skips the test naming the package
// that provides it.
func startEtcd(t *testing.T) *etcdServer {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not in PATH: install it (Debian: apt-get install etcd-server) to run the real-etcd tests")
	}
	s := &etcdServer{
		t: t, bin: bin, dir: t.TempDir(),
		clientURL: "http://" + freePort(t), peerURL: "http://" + freePort(t),
	}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs etcd on the server's ports and data directory (the same on a
// restart, so the data and revisions survive) and waits until it answers.
func (s *etcdServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin,
		"--name", "t", "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.clientURL, "--advertise-client-urls", s.clientURL,
		"--listen-peer-urls", s.peerURL, "--initial-advertise-peer-urls", s.peerURL,
		"--initial-cluster", "t="+s.peerURL, "--log-level", "error")
	log, err := os.Create(filepath.Join(s.dir, "etcd.log"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close()
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); close(exited) }(s.cmd, s.exited)
	cli := s.client()
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "ready")
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.exited:
			out, _ := os.ReadFile(filepath.Join(s.dir, "etcd.log"))
			s.t.Fatalf("etcd exited at start: %s", out)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("etcd not ready after 30 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops etcd with SIGKILL, as a crash would.
func (s *etcdServer) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// client returns a new client of the server; the caller closes it.
func (s *etcdServer) client() *clientv3.Client {
	s.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.t.Fatal(err)
	}
	return cli
}

func (s *etcdServer) put(cli *clientv3.Client, key, value string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		s.t.Fatal(fmt.Errorf("put %s: %w", key, err))
	}
}

func (s *etcdServer) del(cli *clientv3.Client, key string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Delete(ctx, key); err != nil {
		s.t.Fatal(fmt.Errorf("delete %s: %w", key, err))
	}
}
