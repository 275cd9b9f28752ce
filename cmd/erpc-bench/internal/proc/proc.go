package proc

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

// ChildEnv marks a re-executed server process (tests use it from TestMain,
// where os.Args cannot carry the subcommand).
const ChildEnv = "ERPC_BENCH_CHILD"

// Config is what a server process needs to know.
type Config struct {
	System    string
	Transport string
	Busy      bool
	Loss      float64
	Window    int
	CPU       int    // -1: do not pin
	Listen    string // address to listen on, for systems that take one (netsink)
	Netns     string // run the server process in this network namespace (ip netns exec); not passed on
}

func (c Config) args() []string {
	return []string{"serve", "-system", c.System, "-transport", c.Transport,
		"-busy=" + strconv.FormatBool(c.Busy), "-loss", strconv.FormatFloat(c.Loss, 'g', -1, 64),
		"-window", strconv.Itoa(c.Window), "-cpu", strconv.Itoa(c.CPU), "-listen", c.Listen}
}

// Impl is one system's server.
type Impl interface {
	Addr() string
	// control runs a system-specific command and returns its reply.
	Control(args []string) (string, error)
	Close()
}

// Server is the client's handle on a server, in another process or (for
// the in-process memnet transport) in this one.
type Server struct {
	Addr  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	local Impl
	mu    sync.Mutex
}

// Start starts the server for cfg.
func Start(cfg Config) (*Server, error) {
	if cfg.Transport == "memnet" && isErpc(cfg.System) {
		// mem:// exists only inside one process.
		impl, err := newServerImpl(cfg)
		if err != nil {
			return nil, err
		}
		return &Server{Addr: impl.Addr(), local: impl}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, cfg.args()...)
	if cfg.Netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", cfg.Netns, exe}, cfg.args()...)...)
	}
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
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
	s := &Server{cmd: cmd, in: in, out: bufio.NewReader(outp)}
	line, err := s.readLine(10 * time.Second)
	if err != nil || !strings.HasPrefix(line, "addr ") {
		s.Stop()
		if err == nil {
			err = errors.New(line)
		}
		return nil, fmt.Errorf("%s server: %w", cfg.System, err)
	}
	s.Addr = strings.TrimPrefix(line, "addr ")
	return s, nil
}

func (s *Server) readLine(timeout time.Duration) (string, error) {
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

// Ctl sends a command line and returns the reply (without "ok ").
func (s *Server) Ctl(line string) (string, error) {
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

// Memory returns the server's resident set and Go heap in use, in bytes,
// after a GC.
func (s *Server) Memory() (rss, heap int64, err error) {
	r, err := s.Ctl("mem")
	if err != nil {
		return 0, 0, err
	}
	_, err = fmt.Sscan(r, &rss, &heap)
	return rss, heap, err
}

// RSS returns the server's resident set in bytes as it is, without the
// garbage collection Memory runs first: what the operating system sees.
func (s *Server) RSS() (int64, error) {
	r, err := s.Ctl("rss")
	if err != nil {
		return 0, err
	}
	var rss int64
	_, err = fmt.Sscan(r, &rss)
	return rss, err
}

// Stop ends the server: stdin closes, then a kill if it lingers.
func (s *Server) Stop() {
	if s.local != nil {
		s.local.Close()
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

// Kill ends the server process with SIGKILL at once (no cleanup in it:
// the fleet scenario's crashed server) and waits for it.
func (s *Server) Kill() {
	if s.local != nil {
		s.local.Close()
		return
	}
	s.cmd.Process.Kill()
	s.in.Close()
	s.cmd.Wait()
}

// handleCtl runs one control command on impl.
func handleCtl(impl Impl, line string) (string, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", errors.New("empty command")
	}
	if f[0] == "rss" { // as the process is, without a collection first
		return fmt.Sprint(ReadRSS()), nil
	}
	if f[0] == "mem" {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return fmt.Sprintf("%d %d", ReadRSS(), ms.HeapInuse), nil
	}
	return impl.Control(f)
}

// Serve is the "serve" subcommand: the server process.
func Serve(args []string) error {
	fs := flag.NewFlagSet("erpc-bench serve", flag.ContinueOnError)
	var cfg Config
	fs.StringVar(&cfg.System, "system", "erpc", "system to serve")
	fs.StringVar(&cfg.Transport, "transport", "udp", "erpc transport")
	fs.BoolVar(&cfg.Busy, "busy", false, "busy-poll")
	fs.Float64Var(&cfg.Loss, "loss", 0, "erpc packet loss")
	fs.IntVar(&cfg.Window, "window", 0, "erpc window")
	fs.IntVar(&cfg.CPU, "cpu", -1, "CPU to pin to")
	fs.StringVar(&cfg.Listen, "listen", "", "address to listen on (netsink)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.CPU >= 0 {
		if err := PinProcess(cfg.CPU); err != nil {
			fmt.Fprintln(os.Stderr, "erpc-bench serve: pinning:", err)
		}
	}
	impl, err := newServerImpl(cfg)
	if err != nil {
		fmt.Printf("err %v\n", err)
		return err
	}
	defer impl.Close()
	fmt.Printf("addr %s\n", impl.Addr())
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
type serverFunc func(Config) (Impl, error)

// serverFuncs are the servers a process can run, by system name. The
// code that owns a server registers it (registerServer): the systems
// under test, and the servers of the raft, slo and testbed scenarios.
var serverFuncs = map[string]serverFunc{}

// Register makes system's server available to "serve".
func Register(system string, f serverFunc) { serverFuncs[system] = f }

func newServerImpl(cfg Config) (Impl, error) {
	if f, ok := serverFuncs[cfg.System]; ok {
		return f(cfg)
	}
	return nil, fmt.Errorf("unknown system %q", cfg.System)
}

func isErpc(system string) bool { return system == "erpc" || system == "erpc-call" }

// ReadRSS returns the process's resident set in bytes, or -1.
func ReadRSS() int64 {
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
