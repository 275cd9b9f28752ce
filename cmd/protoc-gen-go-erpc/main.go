// Command protoc-gen-go-erpc is a protoc (and buf) plug-in that generates
// erpc clients and servers for the unary methods of protobuf services.
//
// For each .proto file with services it writes <name>_erpc.pb.go into the
// Go package protoc-gen-go writes <name>.pb.go into. For a service Greeter
// with a method SayHello it declares:
//
//   - GreeterERPC_SayHello_FullMethodName, the method's name on the wire,
//     "/package.Greeter/SayHello" (the name gRPC uses);
//   - GreeterERPCClient, with one method per RPC, and
//     NewGreeterERPCClient(*erpc.Session);
//   - GreeterERPCServer, whose methods have the signatures of
//     protoc-gen-go-grpc's unary methods, so one type can serve both;
//   - UnimplementedGreeterERPCServer, to embed by value;
//   - RegisterGreeterERPCServer(*erpc.Server, GreeterERPCServer,
//     ...erpc.HandlerOption) error.
//
// Every name carries "ERPC", so the file lives beside protoc-gen-go-grpc's
// _grpc.pb.go in the same package without a clash.
//
// Streaming methods are left out (erpc has unary calls only): the generated
// file says which. A service whose method names hash to the same erpc
// method ID could never be registered, so the plug-in refuses it.
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
// The plug-in takes protogen's standard options (paths, module, M) and no
// others.
package main

import (
	"flag"
	"fmt"
	"os"

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
	options().Run(generate)
}

// options are the plug-in's: protogen's standard ones only, so any other
// parameter is an error.
func options() protogen.Options {
	var flags flag.FlagSet
	return protogen.Options{ParamFunc: flags.Set}
}
