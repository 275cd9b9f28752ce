// Command protoc-gen-go-erpc is a protoc (and buf) plug-in that generates
// erpc clients and servers for protobuf services: every method, unary,
// server-streaming, client-streaming and bidirectional.
//
// For each .proto file with services it writes <name>_erpc.pb.go into the
// Go package protoc-gen-go writes <name>.pb.go into. For a service Greeter
// with a method SayHello it declares:
//
//   - GreeterERPC_SayHello_FullMethodName, the method's name on the wire,
//     "/package.Greeter/SayHello" (the name gRPC uses);
//   - GreeterERPCClient, with one method per RPC, and
//     NewGreeterERPCClient(erpc.Conn), over a Session or a Client;
//   - GreeterERPCServer, whose unary methods have the signatures of
//     protoc-gen-go-grpc's, so one type can serve both;
//   - UnimplementedGreeterERPCServer, to embed by value;
//   - RegisterGreeterERPCServer(*erpc.Server, GreeterERPCServer,
//     ...erpc.HandlerOption) error: unary methods with erpc.Register (the
//     options apply to them), streaming ones with Server.HandleStream (a
//     goroutine per stream).
//
// Every name carries "ERPC", so the file lives beside protoc-gen-go-grpc's
// _grpc.pb.go in the same package without a clash.
//
// Streaming methods, by default, use erpc's own typed streams: for a
// method Chat, GreeterERPC_ChatServer (what the handler gets: Send, Recv,
// SendAndClose as the shape has them, Context, SetHeader, SendHeader,
// SetTrailer with erpc.Metadata) and GreeterERPC_ChatClient (what the
// client gets: Send, Recv, CloseSend, CloseAndRecv as the shape has them,
// Context, Header, Trailer). The file then imports no gRPC package.
//
// With the option grpc_compat=true the file takes gRPC's shapes and
// imports google.golang.org/grpc and github.com/erpc-go/erpc/contrib/grpc
// (its module must be required):
//
//   - the server's streaming methods take grpc-go's generic stream types
//     (Chat(grpc.BidiStreamingServer[Req, Res]) error,
//     Watch(*Req, grpc.ServerStreamingServer[Res]) error,
//     Upload(grpc.ClientStreamingServer[Req, Res]) error), exactly as
//     protoc-gen-go-grpc's do, so ONE type serves gRPC and erpc clients;
//     contrib/grpc's ServerStream adapts erpc's stream to them;
//   - RegisterGreeterERPCServer makes grpc's metadata functions work in
//     every handler: metadata.FromIncomingContext reads the caller's
//     metadata, and grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer on
//     the handler's (or stream's) context set the response's headers and
//     trailers (contrib/grpc's ServerContext, and ServerStream's Context);
//   - the client's methods have protoc-gen-go-grpc's client signatures
//     (opts ...grpc.CallOption; grpc.ServerStreamingClient[Res] and so on),
//     so GreeterERPCClient is a GreeterClient too: grpc's outgoing
//     metadata is sent, grpc.Header and grpc.Trailer options receive the
//     answer's (contrib/grpc's CallContext; on a stream, when it ends),
//     other options are ignored, and errors carry their gRPC status
//     (status.FromError) while still unwrapping to *erpc.Error.
//
// A method the plug-in cannot generate is an error that names it, and
// protoc fails: two methods of a service whose names hash to the same
// erpc method ID (never servable together), or a method one of whose
// generated identifiers is already declared in its Go package (by a
// message, say).
//
// With protoc:
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//	    --go-erpc_out=. --go-erpc_opt=paths=source_relative greeter.proto
//
// With buf, in buf.gen.yaml (version: v2):
//
//	plugins:
//	  - local: protoc-gen-go
//	    out: gen
//	    opt: paths=source_relative
//	  - local: protoc-gen-go-erpc
//	    out: gen
//	    opt: paths=source_relative
//
// The plug-in takes protogen's standard options (paths, module, M) and
// grpc_compat (true or false, default false), no others:
//
//	--go-erpc_opt=paths=source_relative,grpc_compat=true
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"strconv"

	"google.golang.org/protobuf/compiler/protogen"
)

// version is the plug-in's version, written into every generated file.
const version = "0.1.0"

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println("protoc-gen-go-erpc", version)
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "protoc-gen-go-erpc is a protoc plug-in: run it through protoc (--go-erpc_out) or buf, not by hand")
		os.Exit(2)
	}
	var cfg config
	options(&cfg).Run(func(gen *protogen.Plugin) error { return generate(gen, cfg) })
}

// config is the plug-in's own options.
type config struct {
	// grpcCompat generates gRPC's shapes: see the package doc.
	grpcCompat bool
}

// options are the plug-in's: protogen's standard ones and grpc_compat, so
// any other parameter is an error.
func options(cfg *config) protogen.Options {
	var flags flag.FlagSet
	flags.Func("grpc_compat", "generate grpc-go's stream and client shapes", func(v string) error {
		b, err := strconv.ParseBool(cmp.Or(v, "true"))
		if err != nil {
			return fmt.Errorf("grpc_compat=%s: want true or false", v)
		}
		cfg.grpcCompat = b
		return nil
	})
	return protogen.Options{ParamFunc: flags.Set}
}
