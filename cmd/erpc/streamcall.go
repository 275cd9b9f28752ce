package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection"
)

// Streams: the command sends the request's messages as it reads them (a
// client stream's from -d, one after another, or from standard input as
// they arrive), in a goroutine of their own, while it prints each answer
// on a line of its own as it comes. Standard output is written once a
// message, unbuffered, so each line leaves at once.

// callStream opens the stream m, sends the request's messages, half-closes
// at their end, and prints the answers until the stream ends. A request
// message that is not JSON of m's type cancels the stream.
func (c *cli) callStream(m *reflection.Method, mc *msgCodec, src *requestSource, out io.Writer) error {
	next, done, err := c.streamRequests(m, mc, src)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := c.streamCtx()
	defer cancel()
	if c.cfg.verbose {
		c.printRequestInfo(m, out)
	}
	st, err := c.s.NewStream(ctx, m.Name)
	if err != nil {
		return c.callFailed(ctx, m.Name, err)
	}
	var sent atomic.Int64
	badInput := make(chan error, 1)
	go func() {
		if err := c.sendAll(m, mc, st, next, &sent, src.where()); err != nil {
			badInput <- err // before the cancel: whoever sees the cancel finds it
			cancel()
		}
	}()
	received, err := c.printAnswers(st, mc, out)
	select {
	case bad := <-badInput:
		return bad
	default:
	}
	if c.cfg.verbose {
		printMetadata(out, "Response trailers received", st.Trailer())
		if errors.Is(err, io.EOF) {
			fmt.Fprintf(out, "Sent %s and received %s\n", plural(sent.Load(), "request"), plural(received, "response"))
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case errors.As(err, new(*erpc.Error)):
		return c.callFailed(ctx, m.Name, err) // the stream's status
	}
	return err // an answer the command cannot print
}

// streamRequests returns the request's messages one by one (io.EOF after
// the last): a client stream's, read as they come, none without -d; else
// the one message, {} without -d.
func (c *cli) streamRequests(m *reflection.Method, mc *msgCodec, src *requestSource) (next func() ([]byte, error), done func(), err error) {
	clientStreams := m.Descriptor == nil || m.Descriptor.IsStreamingClient() // a stream no descriptor describes: both sides
	if !clientStreams {
		b, err := src.all()
		if err != nil {
			return nil, nil, err
		}
		one := b
		if mc.jsonIn {
			if one, err = oneMessage(m.Name, b); err != nil {
				return nil, nil, &exitError{exitFailure, fmt.Errorf("the request is not JSON%s: %v", ofType(m), err)}
			}
		}
		return func() ([]byte, error) {
			msg := one
			one = nil
			if msg == nil {
				return nil, io.EOF
			}
			return msg, nil
		}, func() {}, nil
	}
	if !src.given {
		return func() ([]byte, error) { return nil, io.EOF }, func() {}, nil
	}
	r, done, err := src.open()
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(r)
	return func() ([]byte, error) {
		var msg json.RawMessage
		switch err := dec.Decode(&msg); {
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errors.New("unexpected end of JSON input")
		case err != nil:
			return nil, err
		}
		return msg, nil
	}, done, nil
}

// sendAll sends the messages next gives, then half-closes. It stops early,
// without error, when the stream has ended (Recv says how); its error is
// the request's fault.
func (c *cli) sendAll(m *reflection.Method, mc *msgCodec, st erpc.ClientStream, next func() ([]byte, error), sent *atomic.Int64, where string) error {
	for n := 1; ; n++ {
		js, err := next()
		if errors.Is(err, io.EOF) {
			st.CloseSend() // its only failure, a stream already over, is Recv's to tell
			return nil
		}
		var b []byte
		if err == nil {
			b, err = mc.encode(bytes.TrimSpace(js))
		}
		if err != nil {
			return c.badRequest(m, fmt.Sprintf("message %d %s", n, where), fmt.Errorf("%v; the stream %s is canceled", err, m.Name))
		}
		if st.Send(b) != nil {
			return nil // the stream is over: Recv has its status
		}
		sent.Add(1)
	}
}

// printAnswers prints each answer on a line as it comes, until the
// stream ends: io.EOF when it ended well, its status otherwise.
func (c *cli) printAnswers(st erpc.ClientStream, mc *msgCodec, out io.Writer) (received int64, err error) {
	for {
		b, err := st.Recv()
		if c.cfg.verbose && received == 0 {
			md, _ := st.Header()
			printMetadata(out, "Response headers received", md)
		}
		if err != nil {
			return received, err
		}
		text, err := mc.decode(b, false)
		if err != nil {
			return received, err
		}
		if c.cfg.verbose {
			fmt.Fprint(out, "\nResponse contents:\n")
		}
		if _, err := out.Write(text); err != nil {
			return received, err
		}
		received++
	}
}

// streamCtx is a stream's context: the run's (-max-time), with the
// metadata flags, and -deadline only if it was given: a stream may last.
func (c *cli) streamCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(c.root)
	if c.cfg.deadlineSet && c.cfg.deadline > 0 {
		ctx, cancel = context.WithTimeout(c.root, c.cfg.deadline)
	}
	if len(c.cfg.headers) > 0 {
		ctx = erpc.AppendToOutgoingContext(ctx, c.cfg.headers...)
	}
	return ctx, cancel
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
