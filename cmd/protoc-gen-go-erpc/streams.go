package main

import "google.golang.org/protobuf/compiler/protogen"

// generateNativeStreams writes erpc's typed stream interfaces of a
// service's streaming methods (without grpc_compat), and the two generic
// types that implement them over erpc.ServerStream and erpc.ClientStream
// with the protobuf codec.
func generateNativeStreams(g gen) {
	for _, m := range g.s.Methods {
		if kindOf(m) != unary {
			nativeStreamInterfaces(g, m)
		}
	}
	nativeStreamImpls(g)
}

func nativeStreamInterfaces(g gen, m *protogen.Method) {
	k := kindOf(m)
	md := g.erpc("Metadata")
	g.P()
	g.P("// ", streamName(m, "Server"), " is ", m.GoName, "'s stream as its handler sees it")
	g.P("// (erpc.ServerStream, typed).")
	g.P("type ", streamName(m, "Server"), " interface {")
	if k != clientStreaming {
		g.P("// Send sends a response message.")
		g.P("Send(", g.out(m), ") error")
	}
	if k != serverStreaming {
		g.P("// Recv returns the next request message; io.EOF once the client has")
		g.P("// closed its side.")
		g.P("Recv() (", g.in(m), ", error)")
	}
	if k == clientStreaming {
		g.P("// SendAndClose sends the response; the handler then returns nil.")
		g.P("SendAndClose(", g.out(m), ") error")
	}
	g.P("Context() ", g.ctx())
	g.P("SetHeader(", md, ") error")
	g.P("SendHeader(", md, ") error")
	g.P("SetTrailer(", md, ")")
	g.P("}")
	g.P()
	g.P("// ", streamName(m, "Client"), " is ", m.GoName, "'s stream as its client sees it")
	g.P("// (erpc.ClientStream, typed).")
	g.P("type ", streamName(m, "Client"), " interface {")
	if k != serverStreaming {
		g.P("// Send sends a request message; io.EOF if the handler has ended the")
		g.P("// stream (Recv then gives its status).")
		g.P("Send(", g.in(m), ") error")
	}
	if k == clientStreaming {
		g.P("// CloseAndRecv closes the client's side and returns the response.")
		g.P("CloseAndRecv() (", g.out(m), ", error)")
	} else {
		g.P("// Recv returns the next response message: io.EOF when the handler")
		g.P("// returned nil and everything was read, its status error otherwise.")
		g.P("Recv() (", g.out(m), ", error)")
	}
	if k == bidiStreaming {
		g.P("// CloseSend closes the client's side.")
		g.P("CloseSend() error")
	}
	g.P("Context() ", g.ctx())
	g.P("Header() (", md, ", error)")
	g.P("Trailer() ", md)
	g.P("}")
}

func nativeStreamImpls(g gen) {
	n := g.n
	codec := "(" + g.QualifiedGoIdent(protocodecPackage.Ident("Codec")) + "{})"
	errorf := g.erpc("Errorf")
	g.P()
	g.P("// ", n.serverStream, " types an erpc.ServerStream's messages.")
	g.P("type ", n.serverStream, "[Req, Res any] struct{ ", g.erpc("ServerStream"), " }")
	g.P()
	g.P("func (s ", n.serverStream, "[Req, Res]) Send(m *Res) error {")
	g.P("b, err := ", codec, ".Marshal(nil, m)")
	g.P("if err != nil {")
	g.P("return ", errorf, `(`, g.erpc("Internal"), `, "encode %T: %v", m, err)`)
	g.P("}")
	g.P("return s.ServerStream.Send(b)")
	g.P("}")
	g.P()
	g.P("func (s ", n.serverStream, "[Req, Res]) SendAndClose(m *Res) error { return s.Send(m) }")
	g.P()
	g.P("func (s ", n.serverStream, "[Req, Res]) Recv() (*Req, error) {")
	g.P("b, err := s.ServerStream.Recv()")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("m := new(Req)")
	g.P("if err := ", codec, ".Unmarshal(b, m); err != nil {")
	g.P("return nil, ", errorf, "(", g.erpc("InvalidArgument"), `, "decode %T: %v", m, err)`)
	g.P("}")
	g.P("return m, nil")
	g.P("}")
	g.P()
	g.P("// ", n.clientStream, " types an erpc.ClientStream's messages.")
	g.P("type ", n.clientStream, "[Req, Res any] struct{ ", g.erpc("ClientStream"), " }")
	g.P()
	g.P("func (c ", n.clientStream, "[Req, Res]) Send(m *Req) error {")
	g.P("b, err := ", codec, ".Marshal(nil, m)")
	g.P("if err != nil {")
	g.P("return ", errorf, `(`, g.erpc("Internal"), `, "encode %T: %v", m, err)`)
	g.P("}")
	g.P("return c.ClientStream.Send(b)")
	g.P("}")
	g.P()
	g.P("func (c ", n.clientStream, "[Req, Res]) Recv() (*Res, error) {")
	g.P("b, err := c.ClientStream.Recv()")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("m := new(Res)")
	g.P("if err := ", codec, ".Unmarshal(b, m); err != nil {")
	g.P("return nil, ", errorf, "(", g.erpc("Internal"), `, "decode %T: %v", m, err)`)
	g.P("}")
	g.P("return m, nil")
	g.P("}")
	g.P()
	g.P("// CloseAndRecv reads the one response and the stream's end.")
	g.P("func (c ", n.clientStream, "[Req, Res]) CloseAndRecv() (*Res, error) {")
	g.P("if err := c.CloseSend(); err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("m, err := c.Recv()")
	g.P("if err == ", g.QualifiedGoIdent(ioPackage.Ident("EOF")), " {")
	g.P("return nil, ", errorf, "(", g.erpc("Internal"), `, "%s: the stream ended without a response", c.Method())`)
	g.P("}")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("if _, err := c.ClientStream.Recv(); err == nil {")
	g.P("return nil, ", errorf, "(", g.erpc("Internal"), `, "%s: more than one response", c.Method())`)
	g.P("} else if err != io.EOF {")
	g.P("return nil, err")
	g.P("}")
	g.P("return m, nil")
	g.P("}")
}
