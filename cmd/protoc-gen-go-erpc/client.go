package main

import "google.golang.org/protobuf/compiler/protogen"

// clientSignature is a client method's parameters and results: gRPC's
// under grpc_compat, erpc's own otherwise.
func (g gen) clientSignature(m *protogen.Method) string {
	params := "ctx " + g.ctx()
	if k := kindOf(m); k == unary || k == serverStreaming {
		params += ", in " + g.in(m)
	}
	if g.cfg.grpcCompat {
		params += ", opts ..." + g.grpc("CallOption")
	}
	return "(" + params + ") (" + g.clientResult(m) + ", error)"
}

func (g gen) clientResult(m *protogen.Method) string {
	k := kindOf(m)
	switch {
	case k == unary:
		return g.out(m)
	case !g.cfg.grpcCompat:
		return streamName(m, "Client")
	case k == serverStreaming:
		return g.grpc("ServerStreamingClient") + "[" + g.outT(m) + "]"
	case k == clientStreaming:
		return g.grpc("ClientStreamingClient") + g.typeArgs(m)
	}
	return g.grpc("BidiStreamingClient") + g.typeArgs(m)
}

func generateClient(g gen) {
	s, n := g.s, g.n
	g.P()
	g.P("// ", n.client, " is the client API of ", s.Desc.FullName(), " over erpc.")
	if g.cfg.grpcCompat {
		g.P("// Its methods are protoc-gen-go-grpc's client methods: it is a")
		g.P("// ", s.GoName, "Client too. Of the call options, grpc.Header and grpc.Trailer")
		g.P("// receive the answer's metadata and the others are ignored; errors")
		g.P("// carry their gRPC status (status.FromError) and unwrap to *erpc.Error.")
	}
	serviceComments(g.GeneratedFile, s, g.deprecated())
	g.P("type ", n.client, " interface {")
	for i, m := range s.Methods {
		if i > 0 {
			g.P()
		}
		methodComments(g.GeneratedFile, m)
		g.P(m.GoName, g.clientSignature(m))
	}
	g.P("}")
	g.P()
	g.P("type ", n.clientImpl, " struct {")
	g.P("s ", g.erpc("Conn"))
	g.P("}")
	g.P()
	g.P("// ", n.newClient, " returns a client of ", s.Desc.FullName(), " that")
	g.P("// calls over s, a *erpc.Session (one server) or an *erpc.Client (a")
	g.P("// fleet). A call's context deadline reaches the server's handler.")
	deprecated(g.GeneratedFile, g.deprecated())
	g.P("func ", n.newClient, "(s ", g.erpc("Conn"), ") ", n.client, " {")
	g.P("return ", n.clientImpl, "{s}")
	g.P("}")
	for _, m := range s.Methods {
		g.P()
		g.P("func (c ", n.clientImpl, ") ", m.GoName, g.clientSignature(m), " {")
		if g.cfg.grpcCompat {
			compatClientBody(g, m)
		} else {
			nativeClientBody(g, m)
		}
		g.P("}")
	}
}

func compatClientBody(g gen, m *protogen.Method) {
	switch kindOf(m) {
	case unary:
		g.P("out, err := ", g.erpc("Invoke"), "[", g.outT(m), "](", g.erpcgrpc("CallContext"), "(ctx, opts...), c.s, ", constName(m), ", in)")
		g.P("return out, ", g.erpcgrpc("StatusError"), "(err)")
		return
	case serverStreaming:
		g.P("st, err := ", g.erpcgrpc("OpenServerStream"), g.typeArgs(m), "(ctx, c.s, ", constName(m), ", in, opts...)")
	default:
		g.P("st, err := ", g.erpcgrpc("OpenStream"), g.typeArgs(m), "(ctx, c.s, ", constName(m), ", opts...)")
	}
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("return st, nil")
}

func nativeClientBody(g gen, m *protogen.Method) {
	k := kindOf(m)
	if k == unary {
		g.P("return ", g.erpc("Invoke"), "[", g.outT(m), "](ctx, c.s, ", constName(m), ", in)")
		return
	}
	g.P("st, err := c.s.NewStream(ctx, ", constName(m), ")")
	g.P("if err != nil {")
	g.P("return nil, err")
	g.P("}")
	g.P("cs := ", g.n.clientStream, g.typeArgs(m), "{st}")
	if k == serverStreaming {
		g.P("// io.EOF: the handler has ended already; Recv gives its status.")
		g.P("if err := cs.Send(in); err != nil && err != ", g.QualifiedGoIdent(ioPackage.Ident("EOF")), " {")
		g.P("return nil, err")
		g.P("}")
		g.P("if err := st.CloseSend(); err != nil {")
		g.P("return nil, err")
		g.P("}")
	}
	g.P("return cs, nil")
}
