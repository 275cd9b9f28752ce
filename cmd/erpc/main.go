// Command erpc talks to erpc servers from the command line, as grpcurl does
// to gRPC servers: it lists a server's services, describes its methods and
// message types, calls a method with a JSON request and prints the JSON
// response, and checks the server's health. It learns the methods and
// their message types from the server's reflection service
// (github.com/erpc-go/erpc/reflection), so it needs no .proto files.
//
//	erpc list 127.0.0.1:50051
//	erpc list 127.0.0.1:50051 greeter.v1.Greeter
//	erpc describe 127.0.0.1:50051 /greeter.v1.Greeter/SayHello
//	erpc call 127.0.0.1:50051 /greeter.v1.Greeter/SayHello '{"name": "Ada"}'
//	erpc health 127.0.0.1:50051 greeter.v1.Greeter
//
// Run erpc -h for the flags and the exit statuses.
package main

//go:generate internal/testpb/gen.sh

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/erpc-go/erpc"
)

const usage = `usage: erpc [flags] <command> <target> [arguments]

commands:
  list <target> [service]
        the server's services, or one service's methods (-l: with their types)
  describe <target> <name>
        a method, or a service, message or enum by its full name, as .proto text
  call <target> <method> [request]
        call a method with a JSON request and print the JSON response; the
        request is JSON text, @file to read a file, or - to read standard
        input; without one it is {}
  health <target> [service]
        the serving status of the server as a whole, or of one service
        (-all: of every service it has a status for)

A target is what erpc.Dial takes: host:port or udp://host:port (UDP; the
host is a name, an IPv4 address or an [IPv6] one, and each of a name's
addresses is tried), shm:///path/to/socket (shared memory, same host).

The server needs the reflection service (reflection.Register) for list,
describe and call, and the health service (health.Register) for health.

flags (anywhere on the line; -- ends them):
%s

exit status: 0 on success; 1 on an error before or around the call; 2 for a
usage error; 3 when health reports a status other than SERVING; 64+code when
the call failed with that status code (67 InvalidArgument, 69 NotFound, 76
Unimplemented, 78 Unavailable...).
`

// exitError is an error with the process's exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

const (
	exitFailure    = 1
	exitUsage      = 2
	exitNotServing = 3
	exitCodeBase   = 64 // + the status code of a failed call
)

func usageError(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// config is the command line's flags.
type config struct {
	headers        headerFlag
	deadline       time.Duration
	connectTimeout time.Duration
	long           bool
	emitDefaults   bool
	all            bool
}

type headerFlag []string

func (h *headerFlag) String() string { return strings.Join(*h, ", ") }

func (h *headerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if c, cv, cok := strings.Cut(v, ":"); cok && (!ok || len(c) < len(k)) {
		k, val, ok = c, strings.TrimLeft(cv, " "), true
	}
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return fmt.Errorf("want key=value or 'key: value', got %q", v)
	}
	*h = append(*h, k, val)
	return nil
}

func flags(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("erpc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&cfg.headers, "H", "metadata `key=value` sent with the call (repeatable)")
	fs.DurationVar(&cfg.deadline, "deadline", 10*time.Second, "each call's deadline, which the server's handler sees (0: none)")
	fs.DurationVar(&cfg.connectTimeout, "connect-timeout", 5*time.Second, "how long to wait for the server to accept the session")
	fs.BoolVar(&cfg.long, "l", false, "list: each method with its request and response types and codec")
	fs.BoolVar(&cfg.emitDefaults, "emit-defaults", false, "call: print fields that have their default values too")
	fs.BoolVar(&cfg.all, "all", false, "health: the status of every service the server has one for")
	return fs
}

func printUsage(w io.Writer) {
	var b strings.Builder
	fs := flags(new(config))
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fmt.Fprintf(w, usage, strings.TrimRight(b.String(), "\n"))
}

// parse reads flags anywhere among args and returns the other arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil // everything after -- is an argument
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	err := dispatch(args, stdin, stdout)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stderr)
		return 0
	}
	fmt.Fprintln(stderr, "erpc:", strings.TrimPrefix(err.Error(), "erpc: "))
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.code == exitUsage {
			fmt.Fprintln(stderr, "run erpc -h for help")
		}
		return ee.code
	}
	return exitFailure
}

func dispatch(args []string, stdin io.Reader, stdout io.Writer) error {
	var cfg config
	pos, err := parse(flags(&cfg), args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError("%v", err)
	}
	if len(pos) == 0 {
		return usageError("no command (want list, describe, call or health)")
	}
	command := pos[0]
	pos = pos[1:]
	want := func(min, max int, what string) error {
		if len(pos) < min || len(pos) > max {
			return usageError("usage: erpc %s %s", command, what)
		}
		return nil
	}
	switch command {
	case "list":
		if err := want(1, 2, "<target> [service]"); err != nil {
			return err
		}
		return withSession(&cfg, pos[0], func(c *cli) error { return c.list(arg(pos, 1), stdout) })
	case "describe":
		if err := want(2, 2, "<target> <method, service, message or enum>"); err != nil {
			return err
		}
		return withSession(&cfg, pos[0], func(c *cli) error { return c.describe(pos[1], stdout) })
	case "call":
		if err := want(2, 3, "<target> <method> [request: JSON, @file, or - for standard input]"); err != nil {
			return err
		}
		req, err := readRequest(arg(pos, 2), stdin)
		if err != nil {
			return err
		}
		return withSession(&cfg, pos[0], func(c *cli) error { return c.call(pos[1], req, stdout) })
	case "health":
		if err := want(1, 2, "<target> [service]"); err != nil {
			return err
		}
		if cfg.all && len(pos) == 2 {
			return usageError("health: -all or a service, not both")
		}
		return withSession(&cfg, pos[0], func(c *cli) error { return c.health(arg(pos, 1), stdout) })
	}
	return usageError("unknown command %q (want list, describe, call or health)", command)
}

func arg(pos []string, i int) string {
	if i < len(pos) {
		return pos[i]
	}
	return ""
}

// readRequest reads the call's request argument: JSON text, @file or -.
func readRequest(a string, stdin io.Reader) ([]byte, error) {
	switch {
	case a == "":
		return []byte("{}"), nil
	case a == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read the request from standard input: %v", err)
		}
		return b, nil
	case strings.HasPrefix(a, "@"):
		b, err := os.ReadFile(a[1:])
		if err != nil {
			return nil, fmt.Errorf("read the request: %v", err)
		}
		return b, nil
	}
	return []byte(a), nil
}

// withSession dials target and runs fn with a session to it.
func withSession(cfg *config, target string, fn func(c *cli) error) error {
	if err := checkTarget(target); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.connectTimeout)
	defer cancel()
	s, err := erpc.Dial(ctx, target)
	if err != nil {
		switch erpc.CodeOf(err) {
		case erpc.DeadlineExceeded:
			err = fmt.Errorf("no erpc server accepted a session at %s within %v (-connect-timeout)%s", target, cfg.connectTimeout, triedPart(err, target))
		case erpc.InvalidArgument:
		default:
			err = fmt.Errorf("connect to %s: %v", target, strings.TrimPrefix(err.Error(), "erpc: "))
		}
		return err
	}
	defer s.Close()
	return fn(newCLI(cfg, s, target))
}

// triedPart is what Dial's error says it tried, after the name of the
// target ("tried 127.0.0.1:31850: no answer yet"), as ": ..."; "" if it
// says nothing more.
func triedPart(err error, target string) string {
	var e *erpc.Error
	if !errors.As(err, &e) {
		return ""
	}
	if _, rest, ok := strings.Cut(e.Msg, fmt.Sprintf("dial %q: ", target)); ok && rest != "" {
		return ": " + rest
	}
	return ""
}

// checkTarget refuses the targets no other process can reach.
func checkTarget(target string) error {
	switch {
	case target == "":
		return usageError("empty target (want host:port, udp://host:port or shm:///path)")
	case strings.HasPrefix(target, "mem://"):
		return usageError("%s: mem:// endpoints live inside one process; the erpc command cannot reach them (serve on udp:// or shm:// to use it)", target)
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		return usageError("%s: erpc speaks its own protocol over UDP or shared memory, not HTTP (want host:port, udp://host:port or shm:///path)", target)
	}
	return nil
}
