package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection"
)

// describe prints a method, service, message or enum; every service
// without a name.
func (c *cli) describe(name string, out io.Writer) error {
	ms, err := c.methods()
	if err != nil {
		return err
	}
	if name == "" {
		return c.describeAll(ms, out)
	}
	full := resolve(ms, name)
	for _, m := range ms {
		if m.Name == full {
			return c.describeMethod(full, out)
		}
	}
	ctx, cancel := c.ctx()
	defer cancel()
	d, err := c.rc.FindSymbol(ctx, strings.TrimPrefix(symbolName(name), "."))
	if err != nil {
		if erpc.CodeOf(err) == erpc.NotFound {
			return &exitError{exitCodeBase + int(erpc.NotFound), fmt.Errorf(
				"the server at %s has no method %q, and its protobuf registry no symbol of that name (erpc %s list -l lists the methods)",
				c.target, name, c.target)}
		}
		return c.failed("describe "+name, err)
	}
	fmt.Fprint(out, describeNoted(d, uncallableNote(ms)))
	return nil
}

// describeAll prints every service of the server, as .proto text where
// its descriptors have it, and the methods that belong to no service.
func (c *cli) describeAll(ms []erpc.MethodInfo, out io.Writer) error {
	services := map[string]bool{}
	var loose []erpc.MethodInfo
	for _, m := range ms {
		if svc, _, ok := reflection.SplitMethodName(m.Name); ok {
			services[svc] = true
		} else {
			loose = append(loose, m)
		}
	}
	names := make([]string, 0, len(services))
	for n := range services {
		names = append(names, n)
	}
	sort.Strings(names)
	sep := ""
	for _, n := range names {
		ctx, cancel := c.ctx()
		d, err := c.rc.FindSymbol(ctx, n)
		cancel()
		fmt.Fprint(out, sep)
		sep = "\n"
		if sd, ok := d.(protoreflect.ServiceDescriptor); err == nil && ok {
			fmt.Fprint(out, describeNoted(sd, uncallableNote(ms)))
			continue
		}
		if err != nil && erpc.CodeOf(err) != erpc.NotFound {
			return c.failed("describe "+n, err)
		}
		fmt.Fprintf(out, "// %s: the server's descriptors do not define it; its methods:\n", n)
		for _, m := range ms {
			if svc, _, ok := reflection.SplitMethodName(m.Name); ok && svc == n {
				fmt.Fprintln(out, methodLine(m))
			}
		}
	}
	if len(loose) > 0 {
		fmt.Fprintf(out, "%s// methods of no service:\n", sep)
		for _, m := range loose {
			fmt.Fprintln(out, methodLine(m))
		}
	}
	return nil
}

func (c *cli) describeMethod(name string, out io.Writer) error {
	m, err := c.method(name)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, methodLine(m.MethodInfo))
	codec := m.Codec
	switch {
	case m.Stream && m.Request != nil:
		codec = "proto, as its descriptor says"
	case m.Stream:
		codec = "none: a stream of bytes"
	case codec == "":
		codec = "none: a raw handler of bytes"
	}
	run := "inline, on the event loop"
	switch {
	case m.Stream:
		run = "a stream: on a goroutine of its own per stream"
	case m.Background:
		run = "in the background (erpc.Background)"
	}
	fmt.Fprintf(out, "  codec: %s\n  runs: %s\n", codec, run)
	if m.Stream {
		fmt.Fprintf(out, "  the command: %s\n", streamShape(m.Descriptor))
	}
	if m.Descriptor != nil {
		fmt.Fprintf(out, "  defined in %s as:\n    %s\n", m.Descriptor.ParentFile().Path(), rpcLine(m.Descriptor))
	}
	for _, md := range []protoreflect.MessageDescriptor{m.Request, m.Response} {
		if md != nil {
			fmt.Fprintln(out)
			fmt.Fprint(out, describeDescriptor(md))
		}
		if m.Request == m.Response {
			break
		}
	}
	return nil
}

// streamShape says how the command calls a stream of descriptor d (nil:
// a stream no descriptor describes).
func streamShape(d protoreflect.MethodDescriptor) string {
	switch {
	case d == nil:
		return "sends each JSON value of -d (@: of standard input, as it comes) as its bytes, prints each answer on a line"
	case d.IsStreamingClient() && d.IsStreamingServer():
		return "bidirectional: sends -d's messages (@: standard input's, as they come) while it prints each answer on a line"
	case d.IsStreamingClient():
		return "client-streaming: sends -d's messages (@: standard input's, as they come), prints the answer"
	case d.IsStreamingServer():
		return "server-streaming: sends -d's message, prints each answer on a line as it comes"
	}
	return "sends -d's message, prints the answer"
}

// uncallableNote is the note describe prints after a method of a service's
// .proto that the command cannot call: one the server (whose methods are
// ms) does not serve.
func uncallableNote(ms []erpc.MethodInfo) func(protoreflect.MethodDescriptor) string {
	served := map[string]bool{}
	for _, m := range ms {
		served[m.Name] = true
	}
	return func(m protoreflect.MethodDescriptor) string {
		if !served[fmt.Sprintf("/%s/%s", m.Parent().FullName(), m.Name())] {
			return "not served at this target"
		}
		return ""
	}
}

// symbolName is the protobuf full name of a method a user names as
// /package.Service/Method or package.Service/Method; other names as they
// are.
func symbolName(name string) string {
	if svc, m, ok := reflection.SplitMethodName("/" + strings.TrimPrefix(name, "/")); ok {
		return svc + "." + m
	}
	return name
}

// notCallable explains why the server's descriptors declare the method
// name but the command cannot call it, or returns nil if they do not
// declare it.
func (c *cli) notCallable(name string) error {
	ctx, cancel := c.ctx()
	defer cancel()
	d, err := c.rc.FindSymbol(ctx, strings.TrimPrefix(symbolName(name), "."))
	md, ok := d.(protoreflect.MethodDescriptor)
	if err != nil || !ok {
		return nil
	}
	name = fmt.Sprintf("/%s/%s", md.Parent().FullName(), md.Name())
	why := fmt.Sprintf("the server at %s does not serve %s, which %s declares", c.target, name, md.ParentFile().Path())
	return &exitError{exitCodeBase + int(erpc.Unimplemented), errors.New(why)}
}
