package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/erpc-go/erpc"
)

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cfg config
	fs := flags(&cfg)
	pos, err := parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError("%v", err)
	}
	fs.Visit(func(f *flag.Flag) { cfg.deadlineSet = cfg.deadlineSet || f.Name == "deadline" })
	if cfg.format != "json" {
		return usageError("-format %s: the erpc command reads and prints json only", cfg.format)
	}
	inv, err := parseInvocation(pos)
	if err != nil {
		return err
	}
	if inv.formerOrder {
		fmt.Fprintln(stderr, inv.formerOrderNote())
	}
	if cfg.data.set && inv.command != "call" {
		return usageError("-d is the request of a call; %s takes none", inv.command)
	}
	switch inv.command {
	case "list":
		return withSession(&cfg, inv.target, func(c *cli) error { return c.list(arg(inv.args, 0), stdout) })
	case "describe":
		return withSession(&cfg, inv.target, func(c *cli) error { return c.describe(arg(inv.args, 0), stdout) })
	case "call":
		src, err := newRequestSource(&cfg, inv, stdin)
		if err != nil {
			return err
		}
		return withSession(&cfg, inv.target, func(c *cli) error { return c.call(inv.args[0], src, stdout) })
	case "health":
		if cfg.all && len(inv.args) == 1 {
			return usageError("health: -all or a service, not both")
		}
		return withSession(&cfg, inv.target, func(c *cli) error { return c.health(arg(inv.args, 0), stdout) })
	}
	return usageError("unknown command %q", inv.command) // parseInvocation knows them all
}

func arg(pos []string, i int) string {
	if i < len(pos) {
		return pos[i]
	}
	return ""
}

// withSession dials target and runs fn with a session to it, all within
// -max-time.
func withSession(cfg *config, target string, fn func(c *cli) error) error {
	if err := checkTarget(target); err != nil {
		return err
	}
	root, cancelRoot := context.Background(), context.CancelFunc(func() {})
	if cfg.maxTime > 0 {
		root, cancelRoot = context.WithTimeout(root, cfg.maxTime)
	}
	defer cancelRoot()
	opts, err := cfg.tls.dialOptions(target)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(root, cfg.connectTimeout)
	defer cancel()
	s, err := erpc.Dial(ctx, target, opts...)
	if err != nil {
		switch erpc.CodeOf(err) {
		case erpc.DeadlineExceeded:
			limit := fmt.Sprintf("%v (-connect-timeout)", cfg.connectTimeout)
			if root.Err() != nil {
				limit = fmt.Sprintf("%v (-max-time)", cfg.maxTime)
			}
			err = fmt.Errorf("no erpc server accepted a session at %s within %s%s", target, limit, triedPart(err, target))
		case erpc.InvalidArgument:
			err = policyRefusal(err, target)
		case erpc.Unauthenticated:
			err = tlsRequired(err, target)
		default:
			err = fmt.Errorf("connect to %s: %v", target, strings.TrimPrefix(err.Error(), "erpc: "))
		}
		return err
	}
	defer s.Close()
	return fn(newCLI(root, cfg, s, target))
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

// checkTarget refuses what cannot be a target, and the targets no other
// process can reach.
func checkTarget(target string) error {
	const forms = "host:port, udp://host:port, tcp://host:port or shm:///path"
	switch {
	case target == "":
		return usageError("empty target (want %s)", forms)
	case strings.HasPrefix(target, "mem://"):
		return usageError("%s: mem:// endpoints live inside one process; the erpc command cannot reach them (serve on udp://, tcp:// or shm:// to use it)", target)
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		return usageError("%s: erpc speaks its own protocol over UDP, TCP or shared memory, not HTTP (want %s)", target, forms)
	case !strings.Contains(target, ":"):
		return usageError("%q is not a target (want %s; the target comes first: erpc [flags] TARGET list)", target, forms)
	}
	return nil
}
