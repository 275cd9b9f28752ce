package main

import "google.golang.org/protobuf/compiler/protogen"

// serverSignature is a server method's parameters and results, those of
// protoc-gen-go-grpc's server interface under grpc_compat (and, for
// unary methods, always).
func (g gen) serverSignature(m *protogen.Method) string {
	k := kindOf(m)
	if k == unary {
		return "(" + g.ctx() + ", " + g.in(m) + ") (" + g.out(m) + ", error)"
	}
	var stream string
	switch {
	case !g.cfg.grpcCompat:
		stream = streamName(m, "Server")
	case k == serverStreaming:
		stream = g.grpc("ServerStreamingServer") + "[" + g.outT(m) + "]"
	case k == clientStreaming:
		stream = g.grpc("ClientStreamingServer") + g.typeArgs(m)
	default:
		stream = g.grpc("BidiStreamingServer") + g.typeArgs(m)
	}
	if k == serverStreaming {
		return "(" + g.in(m) + ", " + stream + ") error"
	}
	return "(" + stream + ") error"
}

func generateServer(g gen) {
	s, n := g.s, g.n
	g.P()
	g.P("// ", n.server, " is the server API of ", s.Desc.FullName(), " over erpc.")
	if g.cfg.grpcCompat || !hasStreams(s) {
		g.P("// Its methods are the ones protoc-gen-go-grpc generates for gRPC, and it asks")
		g.P("// for no unexported method: a type that serves gRPC serves erpc unchanged.")
	} else {
		g.P("// Its unary methods are the ones protoc-gen-go-grpc generates for gRPC; its")
		g.P("// streaming ones take erpc's stream types (grpc_compat=true generates")
		g.P("// gRPC's, for a type that serves both).")
	}
	g.P("// Embed ", n.unimplemented, ", or gRPC's Unimplemented server")
	g.P("// if the type serves both, by value (one of the two: methods left to both")
	g.P("// are ambiguous), so that methods added to the service later have a default.")
	serviceComments(g.GeneratedFile, s, g.deprecated())
	g.P("type ", n.server, " interface {")
	for i, m := range s.Methods {
		if i > 0 {
			g.P()
		}
		methodComments(g.GeneratedFile, m)
		g.P(m.GoName, g.serverSignature(m))
	}
	g.P("}")
	g.P()
	g.P("// ", n.unimplemented, " answers every method with the code")
	g.P("// Unimplemented. Embed it by value in the type that implements ", n.server, ".")
	g.P("type ", n.unimplemented, " struct{}")
	for _, m := range s.Methods {
		g.P()
		g.P("func (", n.unimplemented, ") ", m.GoName, g.serverSignature(m), " {")
		unimplemented := "&" + g.erpc("Error") + "{Code: " + g.erpc("Unimplemented") + `, Msg: "method ` + fullMethodName(m) + ` not implemented"}`
		if kindOf(m) == unary {
			g.P("return nil, ", unimplemented)
		} else {
			g.P("return ", unimplemented)
		}
		g.P("}")
	}
}

func generateRegister(g gen) {
	s, n := g.s, g.n
	g.P()
	g.P("// ", n.register, " registers impl's methods on srv under their")
	if hasStreams(s) {
		g.P("// full method names. opts apply to every unary method: erpc.Background() for")
		g.P("// methods that block. Streaming methods run on a goroutine of their own")
		g.P("// per stream. It fails if srv already serves, or already has one of the")
		g.P("// names or a name with the same ID on the wire (a hash collision); the")
		g.P("// methods registered before the failure stay registered.")
	} else { // as before streams, so that unary services' files do not change
		g.P("// full method names. opts apply to every method: erpc.Background() for methods")
		g.P("// that block. It fails if srv already serves, or already has one of the names")
		g.P("// or a name with the same ID on the wire (a hash collision); the methods")
		g.P("// registered before the failure stay registered.")
	}
	if g.cfg.grpcCompat {
		g.P("//")
		g.P("// impl's methods see their calls as gRPC's do: metadata.FromIncomingContext")
		g.P("// gives the caller's metadata, and grpc.SetHeader, grpc.SendHeader and")
		g.P("// grpc.SetTrailer on the method's (or stream's) context set the response's")
		g.P("// headers and trailers (see contrib/grpc's ServerContext and ServerStream).")
	}
	deprecated(g.GeneratedFile, g.deprecated())
	g.P("func ", n.register, "(srv *", g.erpc("Server"), ", impl ", n.server, ", opts ...", g.erpc("HandlerOption"), ") error {")
	g.P("if impl == nil {")
	g.P("return &", g.erpc("Error"), "{Code: ", g.erpc("InvalidArgument"), `, Msg: "register `, s.Desc.FullName(), `: nil implementation"}`)
	g.P("}")
	for _, m := range s.Methods {
		switch k := kindOf(m); {
		case k == unary && g.cfg.grpcCompat:
			g.P("if err := ", g.erpc("Register"), "(srv, ", constName(m), ", func(ctx ", g.ctx(), ", in ", g.in(m), ") (", g.out(m), ", error) {")
			g.P("return impl.", m.GoName, "(", g.erpcgrpc("ServerContext"), "(ctx, ", constName(m), "), in)")
			g.P("}, opts...); err != nil {")
		case k == unary:
			g.P("if err := ", g.erpc("Register"), "(srv, ", constName(m), ", impl.", m.GoName, ", opts...); err != nil {")
		default:
			g.P("if err := srv.HandleStream(", constName(m), ", func(s ", g.erpc("ServerStream"), ") error {")
			streamHandlerBody(g, m)
			g.P("}); err != nil {")
		}
		g.P("return err")
		g.P("}")
	}
	g.P("return nil")
	g.P("}")
}

// streamHandlerBody calls impl's streaming method m on the erpc stream s.
func streamHandlerBody(g gen, m *protogen.Method) {
	k := kindOf(m)
	switch {
	case g.cfg.grpcCompat && k == serverStreaming:
		g.P("return ", g.erpcgrpc("ServeServerStream"), g.typeArgs(m), "(s, impl.", m.GoName, ")")
	case g.cfg.grpcCompat:
		g.P("return impl.", m.GoName, "(", g.erpcgrpc("NewServerStream"), g.typeArgs(m), "(s))")
	case k == serverStreaming:
		g.P("st := ", g.n.serverStream, g.typeArgs(m), "{s}")
		g.P("in, err := st.Recv()")
		g.P("if err == ", g.QualifiedGoIdent(ioPackage.Ident("EOF")), " {")
		g.P("return &", g.erpc("Error"), "{Code: ", g.erpc("InvalidArgument"), `, Msg: "`, fullMethodName(m), `: the client sent no request message"}`)
		g.P("}")
		g.P("if err != nil {")
		g.P("return err")
		g.P("}")
		g.P("return impl.", m.GoName, "(in, st)")
	default:
		g.P("return impl.", m.GoName, "(", g.n.serverStream, g.typeArgs(m), "{s})")
	}
}
