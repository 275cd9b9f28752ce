package main

//go:generate internal/testpb/gen.sh

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

const usage = `usage: erpc [flags] TARGET list [SERVICE]
       erpc [flags] TARGET describe [SYMBOL]
       erpc [flags] TARGET METHOD            (or: erpc [flags] TARGET call METHOD)
       erpc [flags] TARGET health [SERVICE]

As with grpcurl, flags come before the target, then what to do:
  list [SERVICE]
        the server's services, or one service's methods (-l: with their types)
  describe [SYMBOL]
        a method, or a service, message or enum by its full name, as .proto
        text; without a symbol, every service. Methods the server's .proto
        files declare but it does not serve are marked
  METHOD
        call a method (/package.Service/Method, package.Service/Method or
        package.Service.Method; a raw handler by its name) with the request
        -d gives, and print the JSON response; a stream's responses one a
        line, as they come (see Streams)
  health [SERVICE]
        the serving status of the server as a whole, or of one service
        (-all: of every service it has a status for)
A method named like a command (list...) is called with: TARGET call METHOD.

A target is what erpc.Dial takes: host:port or udp://host:port (UDP; the
host is a name, an IPv4 address or an [IPv6] one, and each of a name's
addresses is tried), tcp://host:port (TCP), shm:///path/to/socket (shared
memory, same host).

Security, as grpcurl's flags: -plaintext for no TLS; -cacert, -cert and
-key, -insecure (no verification of the server) or -servername for TLS
1.3. With none of them, loopback and shm:// targets are plaintext and
any other target is refused: a session that leaves the host is never
plaintext by accident.

The server needs the reflection service (reflection.Register) for list,
describe and calls, and the health service (health.Register) for health.

The request (-d) is JSON: the method's message in protojson form, or the
JSON of a json-codec method; a raw handler gets the bytes as they are.
-d @ reads it from standard input, -d @FILE from a file; without -d the
request is {}. Several JSON messages may follow one another (white space
between them, or none); a unary method takes exactly one.

Streams: a server-streaming method takes one request (-d's) and prints
each response as one line of JSON, as it comes, until the stream ends. A
client-streaming method sends each message of -d (-d @: of standard input,
each sent as soon as it is read; without -d, none), half-closes at their
end and prints the response. A bidirectional one sends standard input's
messages as they arrive while it prints each response as it comes, and
half-closes when standard input ends. A message that is not JSON of the
method's type cancels the stream (exit 1). A stream that ends with an
error prints its responses, then the status on standard error (exit
64+code). -max-time bounds the whole stream; -deadline applies to streams
only when given (a stream may last).

flags (before the target, as grpcurl has them; elsewhere too; -- ends them):
%s

The former order, command first (erpc list TARGET, erpc describe TARGET
SYMBOL, erpc call TARGET METHOD [REQUEST: JSON, @FILE or - for standard
input], erpc health TARGET), still works and is deprecated.

exit status: 0 on success; 1 on an error before or around the call; 2 for a
usage error; 3 when health reports a status other than SERVING; 64+code when
the call failed with that status code (67 InvalidArgument, 68
DeadlineExceeded, 69 NotFound, 76 Unimplemented, 78 Unavailable...).
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
	data           dataFlag
	deadline       time.Duration
	deadlineSet    bool // -deadline given: streams have it too
	maxTime        time.Duration
	connectTimeout time.Duration
	format         string
	tls            tlsFlags // tlsflags.go
	long           bool
	emitDefaults   bool
	all            bool
	verbose        bool
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
		return fmt.Errorf("want 'key: value' or key=value, got %q", v)
	}
	*h = append(*h, k, val)
	return nil
}

// dataFlag is -d: the request, and whether it was given.
type dataFlag struct {
	text string
	set  bool
}

func (d *dataFlag) String() string { return d.text }

func (d *dataFlag) Set(v string) error {
	d.text, d.set = v, true
	return nil
}

// secondsFlag is a time in seconds, as grpcurl's flags have it ("2",
// "0.5"), or a Go duration ("300ms").
type secondsFlag struct{ d *time.Duration }

func (s secondsFlag) String() string {
	if s.d == nil || *s.d == 0 {
		return "" // flag's usage prints no default for the zero value
	}
	return s.d.String()
}

func (s secondsFlag) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if !(f >= 0 && f <= math.MaxInt64/float64(time.Second)) { // NaN too
			return fmt.Errorf("want seconds from 0, got %q", v)
		}
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want seconds (2, 0.5) or a duration (300ms), got %q", v)
	}
	*s.d = d
	return nil
}

func flags(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("erpc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.deadline, cfg.connectTimeout, cfg.format = 10*time.Second, 5*time.Second, "json"
	fs.Var(&cfg.data, "d", "the request: `JSON` text, @ to read it from standard input, @FILE to read a file")
	fs.Var(&cfg.headers, "H", "request metadata `'key: value'` (or key=value; repeatable)")
	fs.Var(secondsFlag{&cfg.maxTime}, "max-time", "the most the whole run may take, connecting included, in `seconds` (0: no limit)")
	fs.Var(secondsFlag{&cfg.deadline}, "deadline", "each call's deadline, which the server's handler sees, in `seconds` or as a duration (0: none); a stream's only when given")
	fs.Var(secondsFlag{&cfg.connectTimeout}, "connect-timeout", "how long to wait for the server to accept the session, in `seconds` or as a duration")
	fs.StringVar(&cfg.format, "format", cfg.format, "the request's and the response's format: json, the only one")
	cfg.tls.register(fs)
	fs.BoolVar(&cfg.long, "l", false, "list: each method with its request and response types and codec")
	fs.BoolVar(&cfg.emitDefaults, "emit-defaults", false, "calls: print fields that have their default values too")
	fs.BoolVar(&cfg.verbose, "v", false, "calls: print the method, the request metadata, the response headers and trailers, and a count of the messages, as grpcurl -v does")
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
	err := dispatch(args, stdin, stdout, stderr)
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
