package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection"
)

// msgCodec turns a method's JSON requests into its wire messages, and its
// wire answers into JSON.
type msgCodec struct {
	// encode makes a wire message of one JSON message; its error is the
	// request's fault.
	encode func(js []byte) ([]byte, error)
	// decode makes the text to print of an answer: indented JSON ended
	// by a newline, or (one line a message, for streams) compact JSON.
	decode func(b []byte, indent bool) ([]byte, error)
	// jsonIn: the request is JSON messages, rather than bytes as they
	// are (a raw handler's).
	jsonIn bool
}

// codecOf is the codec of m's messages. A stream's messages are
// protobuf's when reflection knows their types (as generated code sends
// them), bytes as they are otherwise. Resolving the types of Any fields
// may ask the server, with resolveCtx.
func (c *cli) codecOf(m *reflection.Method, resolveCtx context.Context) (*msgCodec, error) {
	codec := m.Codec
	if m.Stream && m.Request != nil && m.Response != nil {
		codec = "proto"
	}
	switch codec {
	case "proto":
		if m.Request == nil || m.Response == nil {
			return nil, fmt.Errorf("%s: the server does not name its message types", m.Name)
		}
		return &msgCodec{jsonIn: true, encode: func(js []byte) ([]byte, error) {
			msg := dynamicpb.NewMessage(m.Request)
			if err := (protojson.UnmarshalOptions{Resolver: c.rc.Resolver(resolveCtx)}).Unmarshal(js, msg); err != nil {
				return nil, err
			}
			return proto.Marshal(msg)
		}, decode: func(b []byte, indent bool) ([]byte, error) {
			resp := dynamicpb.NewMessage(m.Response)
			if err := proto.Unmarshal(b, resp); err != nil {
				return nil, fmt.Errorf("decode the response as a %s: %v", m.Response.FullName(), err)
			}
			js, err := protojson.MarshalOptions{Resolver: c.rc.Resolver(resolveCtx), EmitUnpopulated: c.cfg.emitDefaults}.Marshal(resp)
			if err != nil {
				return nil, fmt.Errorf("print the response: %v", err)
			}
			return printable(stableJSON(js, indent), indent), nil
		}}, nil
	case "json":
		return &msgCodec{jsonIn: true, encode: func(js []byte) ([]byte, error) {
			var buf bytes.Buffer
			err := json.Compact(&buf, js)
			return buf.Bytes(), err
		}, decode: func(b []byte, indent bool) ([]byte, error) {
			return printable(stableJSON(b, indent), indent), nil
		}}, nil
	case "":
		// A raw handler: the request's bytes, and the answer's (a
		// stream's: each JSON value of the request, each answer on a
		// line).
		return &msgCodec{jsonIn: m.Stream, encode: func(b []byte) ([]byte, error) { return b, nil },
			decode: func(b []byte, indent bool) ([]byte, error) { return printable(b, indent), nil }}, nil
	}
	return nil, fmt.Errorf("%s uses the codec %q: the erpc command calls methods of protobuf (proto), json and raw handlers only", m.Name, m.Codec)
}

// printable is text ended with a newline, for a stream's answers (one a
// line); an indented answer is already.
func printable(text []byte, indent bool) []byte {
	if indent {
		return text
	}
	return append(text[:len(text):len(text)], '\n')
}

// badRequest is the error of a request message that is not what m takes;
// which names it ("the request", "message 2 of the request").
func (c *cli) badRequest(m *reflection.Method, which string, err error) error {
	hint := ""
	if m.Request != nil {
		hint = fmt.Sprintf("\n(erpc %s describe %s shows the message)", c.target, m.Request.FullName())
	}
	return &exitError{exitFailure, fmt.Errorf("%s is not JSON%s: %v%s", which, ofType(m), err, hint)}
}

// call calls the method name with the request src holds and prints the
// answer; a stream's answers as they come, one a line.
func (c *cli) call(name string, src *requestSource, out io.Writer) error {
	m, err := c.method(name)
	if err != nil {
		return err
	}
	resolveCtx, cancelResolve := c.ctx()
	defer cancelResolve()
	mc, err := c.codecOf(m, resolveCtx)
	if err != nil {
		return err
	}
	if m.Stream {
		return c.callStream(m, mc, src, out)
	}
	req, err := src.all()
	if err != nil {
		return err
	}
	if mc.jsonIn {
		if req, err = oneMessage(m.Name, req); err != nil {
			return &exitError{exitFailure, fmt.Errorf("the request is not JSON%s: %v", ofType(m), err)}
		}
	}
	body, err := mc.encode(req)
	if err != nil {
		return c.badRequest(m, "the request", err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	var header, trailer erpc.Metadata
	if c.cfg.verbose {
		ctx = erpc.WithResponseMetadata(ctx, &header, &trailer)
		c.printRequestInfo(m, out)
	}
	resp, err := c.s.Call(ctx, m.Name, body, nil)
	if c.cfg.verbose {
		printMetadata(out, "Response headers received", header)
	}
	if err != nil {
		if c.cfg.verbose {
			printMetadata(out, "Response trailers received", trailer)
		}
		return c.callFailed(ctx, m.Name, err)
	}
	text, err := mc.decode(resp, true)
	if err != nil {
		return err
	}
	if c.cfg.verbose {
		fmt.Fprint(out, "\nResponse contents:\n")
	}
	if _, err = out.Write(text); err != nil {
		return err
	}
	if c.cfg.verbose {
		printMetadata(out, "Response trailers received", trailer)
		fmt.Fprintln(out, "Sent 1 request and received 1 response")
	}
	return nil
}

// ofType is " of type T" for a method whose request type is known.
func ofType(m *reflection.Method) string {
	if m.Request != nil {
		return fmt.Sprintf(" of type %s", m.Request.FullName())
	}
	return ""
}
