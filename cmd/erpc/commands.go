package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/health"
	"github.com/erpc-go/erpc/health/healthpb"
	"github.com/erpc-go/erpc/reflection"
)

// cli runs the commands over one session.
type cli struct {
	root   context.Context // the whole run's: -max-time
	cfg    *config
	s      *erpc.Session
	target string
	rc     *reflection.Client
}

func newCLI(root context.Context, cfg *config, s *erpc.Session, target string) *cli {
	return &cli{root: root, cfg: cfg, s: s, target: target, rc: reflection.NewClient(s)}
}

// ctx is the context of one call: the run's, with the deadline and the
// metadata flags.
func (c *cli) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := c.root, context.CancelFunc(func() {})
	if c.cfg.deadline > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.cfg.deadline)
	}
	if len(c.cfg.headers) > 0 {
		ctx = erpc.AppendToOutgoingContext(ctx, c.cfg.headers...)
	}
	return ctx, cancel
}

// methods lists the server's methods through reflection.
func (c *cli) methods() ([]erpc.MethodInfo, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	ms, err := c.rc.ListMethods(ctx)
	if err != nil {
		return nil, c.failed("list the methods", err)
	}
	return ms, nil
}

// failed is the error of a call to the server that failed: its status
// code becomes the exit status.
func (c *cli) failed(what string, err error) error {
	limit := fmt.Sprintf("-deadline %v", c.cfg.deadline)
	if c.root.Err() != nil {
		limit = fmt.Sprintf("-max-time %v", c.cfg.maxTime)
	}
	return c.failedLimit(what, err, limit)
}

// failedLimit is failed, with the flag whose deadline bounded the call
// ("-max-time 2s"; "" for none).
func (c *cli) failedLimit(what string, err error, limit string) error {
	code := erpc.CodeOf(err)
	msg := strings.TrimPrefix(err.Error(), "erpc: ")
	if code == erpc.DeadlineExceeded && limit != "" && !strings.Contains(msg, "-deadline") && !strings.Contains(msg, "-max-time") {
		msg += " (" + limit + ")"
	}
	return &exitError{exitCodeBase + int(code), fmt.Errorf("%s at %s: %s", what, c.target, msg)}
}

// limitOf names the flag whose deadline ctx has ("-max-time 2s"), "" if
// none: the server may see a deadline pass, and answer so, before this
// process does.
func (c *cli) limitOf(ctx context.Context) string {
	dl, ok := ctx.Deadline()
	if !ok {
		return ""
	}
	if rootDL, rootOK := c.root.Deadline(); rootOK && dl.Equal(rootDL) {
		return fmt.Sprintf("-max-time %v", c.cfg.maxTime)
	}
	return fmt.Sprintf("-deadline %v", c.cfg.deadline)
}

// list prints the server's services, or the methods of one.
func (c *cli) list(service string, out io.Writer) error {
	ms, err := c.methods()
	if err != nil {
		return err
	}
	if service == "" {
		seen := map[string]bool{}
		var names []string
		for _, m := range ms {
			name := m.Name
			if svc, _, ok := reflection.SplitMethodName(m.Name); ok {
				name = svc
			}
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		sort.Strings(names)
		if c.cfg.long {
			for _, m := range ms {
				fmt.Fprintln(out, methodLine(m))
			}
			return nil
		}
		for _, n := range names {
			fmt.Fprintln(out, n)
		}
		return nil
	}
	found := false
	for _, m := range ms {
		if svc, _, ok := reflection.SplitMethodName(m.Name); ok && svc == strings.TrimPrefix(service, ".") {
			found = true
			if c.cfg.long {
				fmt.Fprintln(out, methodLine(m))
			} else {
				fmt.Fprintln(out, m.Name)
			}
		}
	}
	if !found {
		return &exitError{exitCodeBase + int(erpc.NotFound), fmt.Errorf("the server at %s has no service %q (erpc %s list lists them)", c.target, service, c.target)}
	}
	return nil
}

// methodLine is a method with its types and how it runs.
func methodLine(m erpc.MethodInfo) string {
	var b strings.Builder
	b.WriteString(m.Name)
	switch {
	case m.RequestType != "" || m.ResponseType != "":
		fmt.Fprintf(&b, "(%s) returns (%s)", m.RequestType, m.ResponseType)
	case m.Codec == "" && !m.Stream: // a stream's types are in its descriptor (describe)
		b.WriteString("(bytes) returns (bytes)")
	}
	var notes []string
	if m.Codec != "" && m.Codec != "proto" {
		notes = append(notes, m.Codec)
	}
	if m.Stream {
		notes = append(notes, "stream")
	} else if m.Background {
		notes = append(notes, "background")
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(notes, ", "))
	}
	return b.String()
}

// resolve finds the method a user means by name: its exact name, or the
// name without its leading slash, or package.Service.Method. A name the
// server does not have comes back as /package.Service/Method if the server
// has that service, else as it is.
func resolve(ms []erpc.MethodInfo, name string) string {
	candidates := []string{name, "/" + name}
	if i := strings.LastIndexByte(name, '.'); i > 0 && !strings.Contains(name, "/") {
		candidates = append(candidates, "/"+name[:i]+"/"+name[i+1:])
	}
	for _, cand := range candidates {
		for _, m := range ms {
			if m.Name == cand {
				return cand
			}
		}
	}
	for _, cand := range candidates[1:] {
		svc, _, ok := reflection.SplitMethodName(cand)
		for _, m := range ms {
			if s, _, mok := reflection.SplitMethodName(m.Name); ok && mok && s == svc {
				return cand
			}
		}
	}
	return name
}

// method describes the method name for a call.
func (c *cli) method(name string) (*reflection.Method, error) {
	ms, err := c.methods()
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	m, err := c.rc.Method(ctx, resolve(ms, name))
	if err != nil {
		var e *erpc.Error
		if errors.As(err, &e) && e.Code == erpc.NotFound {
			if why := c.notCallable(name); why != nil {
				return nil, why
			}
			return nil, &exitError{exitCodeBase + int(erpc.NotFound), fmt.Errorf("%s (at %s; erpc %s list -l lists them)", e.Msg, c.target, c.target)}
		}
		return nil, c.failed("describe "+name, err)
	}
	return m, nil
}

// callFailed is the error of a call made with ctx, with its details decoded where the
// server's reflection knows their types.
func (c *cli) callFailed(ctx context.Context, method string, err error) error {
	ee := c.failedLimit("call "+method, err, c.limitOf(ctx))
	var e *erpc.Error
	if !errors.As(err, &e) || len(e.Details) == 0 {
		return ee
	}
	var b strings.Builder
	b.WriteString(ee.Error())
	for _, d := range e.Details {
		fmt.Fprintf(&b, "\n  detail %s: %s", d.Type, c.detailText(d))
	}
	return &exitError{ee.(*exitError).code, errors.New(b.String())}
}

// detailText is a detail as JSON, or its bytes in base64 if its type is
// not one the server's reflection describes.
func (c *cli) detailText(d erpc.Detail) string {
	ctx, cancel := c.ctx()
	defer cancel()
	md, err := c.rc.FindMessage(ctx, d.Type)
	if err == nil {
		m := dynamicpb.NewMessage(md)
		if err = proto.Unmarshal(d.Value, m); err == nil {
			var js []byte
			if js, err = (protojson.MarshalOptions{Resolver: c.rc.Resolver(ctx)}).Marshal(m); err == nil {
				return string(stableJSON(js, false))
			}
		}
	}
	return fmt.Sprintf("(base64) %s", base64.StdEncoding.EncodeToString(d.Value))
}

// health prints the serving status of service, or of every service.
func (c *cli) health(service string, out io.Writer) error {
	ctx, cancel := c.ctx()
	defer cancel()
	noHealth := func(err error) error {
		if erpc.CodeOf(err) == erpc.Unimplemented {
			return &exitError{exitCodeBase + int(erpc.Unimplemented), fmt.Errorf(
				"the server at %s has no health service (erpc.health.v1.Health): it registers one with health.Register", c.target)}
		}
		return c.failed("check health", err)
	}
	if c.cfg.all {
		resp, err := healthpb.NewHealthERPCClient(c.s).List(ctx, &healthpb.HealthListRequest{})
		if err != nil {
			return noHealth(err)
		}
		names := make([]string, 0, len(resp.GetStatuses()))
		for n := range resp.GetStatuses() {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			label := n
			if n == "" {
				label = `""`
			}
			fmt.Fprintf(out, "%s\t%s\n", label, resp.GetStatuses()[n].GetStatus())
		}
		return nil
	}
	st, err := health.Check(ctx, c.s, service)
	if err != nil {
		return noHealth(err)
	}
	fmt.Fprintln(out, st)
	if st != health.Serving {
		what := "the server"
		if service != "" {
			what = fmt.Sprintf("service %q", service)
		}
		return &exitError{exitNotServing, fmt.Errorf("%s at %s is %s", what, c.target, st)}
	}
	return nil
}

// stableJSON is b compacted, or indented by two spaces and ended with a
// newline: protojson varies its spacing from build to build on purpose,
// and the command's output should not. Text that is not JSON comes back
// as it is.
func stableJSON(b []byte, indent bool) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	if !indent {
		return buf.Bytes()
	}
	var out bytes.Buffer
	json.Indent(&out, buf.Bytes(), "", "  ")
	out.WriteByte('\n')
	return out.Bytes()
}
