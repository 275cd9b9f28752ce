package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// commandArgs is each command's arguments, as its usage line shows them.
var commandArgs = map[string]string{
	"list":     "[SERVICE]",
	"describe": "[SYMBOL]",
	"call":     "METHOD",
	"health":   "[SERVICE]",
}

// invocation is what the command line asks for: a command, its target and
// its arguments.
type invocation struct {
	target, command string
	args            []string
	// formerOrder is true for the deprecated order, the command before
	// the target (erpc list TARGET).
	formerOrder bool
}

// parseInvocation reads the arguments left after the flags: grpcurl's
// order, TARGET then a command or a method to call, or the former one,
// a command then TARGET.
func parseInvocation(pos []string) (invocation, error) {
	if len(pos) == 0 {
		return invocation{}, usageError("no target (want: erpc [flags] TARGET list, describe, health or a method to call)")
	}
	if _, isCommand := commandArgs[pos[0]]; isCommand {
		if len(pos) < 2 {
			return invocation{}, usageError("usage: erpc [flags] TARGET %s %s", pos[0], commandArgs[pos[0]])
		}
		inv := invocation{target: pos[1], command: pos[0], args: pos[2:], formerOrder: true}
		return inv, inv.checkArgs()
	}
	inv := invocation{target: pos[0]}
	if err := checkTarget(inv.target); err != nil {
		return inv, err
	}
	if len(pos) == 1 {
		return inv, usageError("nothing to do at %s: after the target, want list, describe, health or a method to call", inv.target)
	}
	if _, isCommand := commandArgs[pos[1]]; isCommand {
		inv.command, inv.args = pos[1], pos[2:]
		return inv, inv.checkArgs()
	}
	inv.command, inv.args = "call", pos[1:]
	if len(inv.args) > 1 {
		return inv, usageError("%q after the method %s: the request goes in -d (erpc -d '{...}' %s %s)", inv.args[1], inv.args[0], inv.target, inv.args[0])
	}
	return inv, nil
}

// checkArgs checks the number of the command's arguments.
func (inv invocation) checkArgs() error {
	lo, hi := 0, 1
	if inv.command == "call" {
		lo, hi = 1, 2 // the method, and the former order's request argument
	}
	if len(inv.args) < lo || len(inv.args) > hi {
		return usageError("usage: erpc [flags] TARGET %s %s", inv.command, commandArgs[inv.command])
	}
	return nil
}

// formerOrderNote is what the deprecated order prints on standard error.
func (inv invocation) formerOrderNote() string {
	return fmt.Sprintf("erpc: note: the command before the target is deprecated; as grpcurl has it: erpc [flags] %s %s",
		inv.target, inv.command)
}

// requestSource is where a call's request comes from: -d's text (or the
// former order's argument), standard input (-d @) or a file (-d @FILE).
type requestSource struct {
	text  string    // the request, when it is given on the command line
	file  string    // the file to read it from, if any
	stdin io.Reader // standard input, if the request is read from it
	given bool      // false: no -d (and no argument); the request is {}
}

// newRequestSource finds the call's request: -d's (JSON text, @ for
// standard input, @FILE for a file) or the former order's argument (JSON
// text, @FILE, or - for standard input); {} without either.
func newRequestSource(cfg *config, inv invocation, stdin io.Reader) (*requestSource, error) {
	src := "{}"
	switch {
	case cfg.data.set && len(inv.args) > 1:
		return nil, usageError("the request twice: -d and the argument %q (-d alone)", inv.args[1])
	case cfg.data.set:
		src = cfg.data.text
		if src == "@" {
			src = "-"
		}
	case len(inv.args) > 1:
		src = inv.args[1]
	}
	given := cfg.data.set || len(inv.args) > 1
	switch {
	case src == "-":
		return &requestSource{stdin: stdin, given: given}, nil
	case strings.HasPrefix(src, "@"):
		return &requestSource{file: src[1:], given: given}, nil
	}
	return &requestSource{text: src, given: given}, nil
}

// where says where the request comes from, for errors: "on standard
// input", "in FILE", "in -d".
func (s *requestSource) where() string {
	switch {
	case s.stdin != nil:
		return "on standard input"
	case s.file != "":
		return "in " + s.file
	}
	return "in the request"
}

// open returns a reader of the request, to read as it comes (a stream's
// messages), and what closes it.
func (s *requestSource) open() (io.Reader, func(), error) {
	switch {
	case s.stdin != nil:
		return s.stdin, func() {}, nil
	case s.file != "":
		f, err := os.Open(s.file)
		if err != nil {
			return nil, nil, fmt.Errorf("read the request: %v", err)
		}
		return f, func() { f.Close() }, nil
	}
	return strings.NewReader(s.text), func() {}, nil
}

// all reads the whole request.
func (s *requestSource) all() ([]byte, error) {
	r, done, err := s.open()
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read the request %s: %v", s.where(), err)
	}
	return b, nil
}

// jsonMessages splits b into the JSON values it holds, one after another
// (white space between them, or none); no value at all is one {}.
func jsonMessages(b []byte) ([]json.RawMessage, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return []json.RawMessage{json.RawMessage("{}")}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []json.RawMessage
	for {
		var m json.RawMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("unexpected end of JSON input")
			}
			return nil, fmt.Errorf("message %d: %v", len(out)+1, err)
		}
		out = append(out, m)
	}
}

// oneMessage is the one JSON message a unary method takes, from b.
func oneMessage(method string, b []byte) ([]byte, error) {
	ms, err := jsonMessages(b)
	if err != nil {
		return nil, err
	}
	if len(ms) != 1 {
		return nil, fmt.Errorf("%s is unary: it takes one request message, and the request holds %d", method, len(ms))
	}
	return ms[0], nil
}
