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
	code := erpc.CodeOf(err)
	msg := strings.TrimPrefix(err.Error(), "erpc: ")
	if code == erpc.DeadlineExceeded && !strings.Contains(msg, "-deadline") && !strings.Contains(msg, "-max-time") {
		if c.root.Err() != nil {
			msg += fmt.Sprintf(" (-max-time %v)", c.cfg.maxTime)
		} else {
			msg += fmt.Sprintf(" (-deadline %v)", c.cfg.deadline)
		}
	}
	return &exitError{exitCodeBase + int(code), fmt.Errorf("%s at %s: %s", what, c.target, msg)}
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
	case m.Codec == "":
		b.WriteString("(bytes) returns (bytes)")
	}
	var notes []string
	if m.Codec != "" && m.Codec != "proto" {
		notes = append(notes, m.Codec)
	}
	if m.Background {
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

// call calls the method name with the JSON request req and prints the
// answer.
func (c *cli) call(name string, req []byte, out io.Writer) error {
	m, err := c.method(name)
	if err != nil {
		return err
	}
	if m.Descriptor != nil && isStream(m.Descriptor) {
		return &exitError{exitCodeBase + int(erpc.Unimplemented), fmt.Errorf("%s is %s", m.Name, streamNote)}
	}
	if m.Codec == "proto" || m.Codec == "json" {
		if req, err = oneMessage(m.Name, req); err != nil {
			return &exitError{exitFailure, fmt.Errorf("the request is not JSON%s: %v", ofType(m), err)}
		}
	}
	// Resolving the types of Any fields may ask the server too, within
	// a deadline of its own.
	resolveCtx, cancelResolve := c.ctx()
	defer cancelResolve()
	var body []byte
	var decode func([]byte) ([]byte, error)
	switch m.Codec {
	case "proto":
		if m.Request == nil || m.Response == nil {
			return fmt.Errorf("%s: the server does not name its message types", m.Name)
		}
		msg := dynamicpb.NewMessage(m.Request)
		if err := (protojson.UnmarshalOptions{Resolver: c.rc.Resolver(resolveCtx)}).Unmarshal(req, msg); err != nil {
			return &exitError{exitFailure, fmt.Errorf("the request is not JSON of type %s: %v\n(erpc %s describe %s shows the message)",
				m.Request.FullName(), err, c.target, m.Request.FullName())}
		}
		if body, err = proto.Marshal(msg); err != nil {
			return fmt.Errorf("encode the request: %v", err)
		}
		decode = func(b []byte) ([]byte, error) {
			resp := dynamicpb.NewMessage(m.Response)
			if err := proto.Unmarshal(b, resp); err != nil {
				return nil, fmt.Errorf("decode the response as a %s: %v", m.Response.FullName(), err)
			}
			js, err := protojson.MarshalOptions{Resolver: c.rc.Resolver(resolveCtx), EmitUnpopulated: c.cfg.emitDefaults}.Marshal(resp)
			if err != nil {
				return nil, fmt.Errorf("print the response: %v", err)
			}
			return stableJSON(js, true), nil
		}
	case "json":
		var buf bytes.Buffer
		if err := json.Compact(&buf, req); err != nil {
			return &exitError{exitFailure, fmt.Errorf("the request is not JSON: %v", err)}
		}
		body = buf.Bytes()
		decode = func(b []byte) ([]byte, error) { return stableJSON(b, true), nil }
	case "":
		// A raw handler: the argument's bytes, and the answer's.
		body = req
		decode = func(b []byte) ([]byte, error) { return b, nil }
	default:
		return fmt.Errorf("%s uses the codec %q: the erpc command calls methods of protobuf (proto), json and raw handlers only", m.Name, m.Codec)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.s.Call(ctx, m.Name, body, nil)
	if err != nil {
		return c.callFailed(m.Name, err)
	}
	text, err := decode(resp)
	if err != nil {
		return err
	}
	_, err = out.Write(text)
	return err
}

// ofType is " of type T" for a method whose request type is known.
func ofType(m *reflection.Method) string {
	if m.Request != nil {
		return fmt.Sprintf(" of type %s", m.Request.FullName())
	}
	return ""
}

// callFailed is the error of a call, with its details decoded where the
// server's reflection knows their types.
func (c *cli) callFailed(method string, err error) error {
	ee := c.failed("call "+method, err)
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
