package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection"
)

// -v prints, on standard output as grpcurl -v does, the method, the
// request metadata, the response headers, each response under "Response
// contents:", the trailers and a count of the messages; errors still go
// to standard error.

// printRequestInfo prints the method and the request metadata.
func (c *cli) printRequestInfo(m *reflection.Method, out io.Writer) {
	fmt.Fprint(out, "\nResolved method descriptor:\n")
	if m.Descriptor != nil {
		fmt.Fprintln(out, rpcLine(m.Descriptor))
	} else {
		fmt.Fprintln(out, methodLine(m.MethodInfo))
	}
	printMetadata(out, "Request metadata to send", erpc.Pairs(c.cfg.headers...))
}

// printMetadata prints md under its title, a line a value, keys sorted.
func printMetadata(out io.Writer, title string, md erpc.Metadata) {
	fmt.Fprintf(out, "\n%s:\n", title)
	if len(md) == 0 {
		fmt.Fprintln(out, "(empty)")
		return
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range md[k] {
			fmt.Fprintf(out, "%s: %s\n", k, v)
		}
	}
}
