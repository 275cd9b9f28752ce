package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The server runs in its own OS process, so that client and server do not
// share a Go runtime (scheduler, GC, netpoller): the client re-executes its
// own binary as "erpc-bench serve ...". The server prints "addr <address>"
// on stdout, then answers one-line commands on stdin ("mem", and the
// system's own, such as raw-shm's "map"), and exits when stdin closes, so
// it cannot outlive its client.

// childEnv marks a re-executed server process (tests use it from TestMain,
// where os.Args cannot carry the subcommand).
const childEnv = "ERPC_BENCH_CHILD"

// srvConfig is what a server process needs to know.
type srvConfig struct {
	system    string
	transport string
	busy      bool
	loss      float64
	window    int
	cpu       int    // -1: do not pin
	listen    string // address to listen on, for systems that take one (netsink)
	netns     string // run the server process in this network namespace (ip netns exec); not passed on
}

func (c srvConfig) args() []string {
	return []string{"serve", "-system", c.system, "-transport", c.transport,
		"-busy=" + strconv.FormatBool(c.busy), "-loss", strconv.FormatFloat(c.loss, 'g', -1, 64),
		"-window", strconv.Itoa(c.window), "-cpu", strconv.Itoa(c.cpu), "-listen", c.listen}
}

// serverImpl is one system's server.
type serverImpl interface {
	addr() string
	// control runs a system-specific command and returns its reply.
	control(args []string) (string, error)
	close()
}

// server is the client's handle on a server, in another process or (for
// the in-process memnet transport) in this one.
type server struct {
	addr  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	local serverImpl
	mu    sync.Mutex
}

// startServer starts the server for cfg.
func startServer(cfg srvConfig) (*server, error) {
	if cfg.transport == "memnet" && isErpc(cfg.system) {
		// mem:// exists only inside one process.
		impl, err := newServerImpl(cfg)
		if err != nil {
			return nil, err
		}
		return &server{addr: impl.addr(), local: impl}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, cfg.args()...)
	if cfg.netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", cfg.netns, exe}, cfg.args()...)...)
	}
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	setDeathSignal(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, in: in, out: bufio.NewReader(outp)}
	line, err := s.readLine(10 * time.Second)
	if err != nil || !strings.HasPrefix(line, "addr ") {
		s.stop()
		if err == nil {
			err = errors.New(line)
		}
		return nil, fmt.Errorf("%s server: %w", cfg.system, err)
	}
	s.addr = strings.TrimPrefix(line, "addr ")
	return s, nil
}

func (s *server) readLine(timeout time.Duration) (string, error) {
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		l, err := s.out.ReadString('\n')
		ch <- res{strings.TrimSpace(l), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.line == "" {
			return "", fmt.Errorf("server exited: %w", r.err)
		}
		return r.line, nil
	case <-time.After(timeout):
		return "", errors.New("server did not answer")
	}
}

// ctl sends a command line and returns the reply (without "ok ").
func (s *server) ctl(line string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.local != nil {
		return handleCtl(s.local, line)
	}
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		return "", err
	}
	reply, err := s.readLine(30 * time.Second)
	if err != nil {
		return "", err
	}
	if r, ok := strings.CutPrefix(reply, "ok"); ok {
		return strings.TrimSpace(r), nil
	}
	return "", errors.New(strings.TrimPrefix(reply, "err "))
}

// memory returns the server's resident set and Go heap in use, in bytes,
// after a GC.
func (s *server) memory() (rss, heap int64, err error) {
	r, err := s.ctl("mem")
	if err != nil {
		return 0, 0, err
	}
	_, err = fmt.Sscan(r, &rss, &heap)
	return rss, heap, err
}

// stop ends the server: stdin closes, then a kill if it lingers.
func (s *server) stop() {
	if s.local != nil {
		s.local.close()
		return
	}
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// handleCtl runs one control command on impl.
func handleCtl(impl serverImpl, line string) (string, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", errors.New("empty command")
	}
	if f[0] == "mem" {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return fmt.Sprintf("%d %d", readRSS(), ms.HeapInuse), nil
	}
	return impl.control(f)
}

// serveMain is the "serve" subcommand: the server process.
func serveMain(args []string) error {
	fs := flag.NewFlagSet("erpc-bench serve", flag.ContinueOnError)
	var cfg srvConfig
	fs.StringVar(&cfg.system, "system", "erpc", "system to serve")
	fs.StringVar(&cfg.transport, "transport", "udp", "erpc transport")
	fs.BoolVar(&cfg.busy, "busy", false, "busy-poll")
	fs.Float64Var(&cfg.loss, "loss", 0, "erpc packet loss")
	fs.IntVar(&cfg.window, "window", 0, "erpc window")
	fs.IntVar(&cfg.cpu, "cpu", -1, "CPU to pin to")
	fs.StringVar(&cfg.listen, "listen", "", "address to listen on (netsink)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.cpu >= 0 {
		if err := pinProcess(cfg.cpu); err != nil {
			fmt.Fprintln(os.Stderr, "erpc-bench serve: pinning:", err)
		}
	}
	impl, err := newServerImpl(cfg)
	if err != nil {
		fmt.Printf("err %v\n", err)
		return err
	}
	defer impl.close()
	fmt.Printf("addr %s\n", impl.addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		reply, err := handleCtl(impl, sc.Text())
		if err != nil {
			fmt.Printf("err %v\n", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Printf("ok %s\n", reply)
		}
	}
	return nil
}

// serverFunc makes one system's server, in the server process.
type serverFunc func(srvConfig) (serverImpl, error)

// serverFuncs are the servers a process can run, by system name. The
// code that owns a server registers it (registerServer): the systems
// under test, and the servers of the raft, slo and testbed scenarios.
var serverFuncs = map[string]serverFunc{}

// registerServer makes system's server available to "serve".
func registerServer(system string, f serverFunc) { serverFuncs[system] = f }

func newServerImpl(cfg srvConfig) (serverImpl, error) {
	if f, ok := serverFuncs[cfg.system]; ok {
		return f(cfg)
	}
	return nil, fmt.Errorf("unknown system %q", cfg.system)
}

func isErpc(system string) bool { return system == "erpc" || system == "erpc-call" }

// readRSS returns the process's resident set in bytes, or -1.
func readRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return pages * int64(os.Getpagesize())
}
