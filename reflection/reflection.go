// Package reflection is erpc's reflection service: it tells a client that
// has no .proto files what a server's methods are and how their messages
// are made, so tools (the erpc command, like grpcurl for gRPC) can list
// them and call them with JSON.
//
// A server registers it with its other handlers, before it serves:
//
//	srv := erpc.NewServer()
//	greeterpb.RegisterGreeterERPCServer(srv, impl)
//	if err := reflection.Register(srv); err != nil { ... }
//	ep, err := srv.Listen(addr)
//
// ListMethods answers from srv.MethodInfos (every method registered on srv,
// before or after Register); FileContainingSymbol and FileByFilename from
// the protobuf registry (protoregistry.GlobalFiles: every .proto file linked
// into the server program), each file with its imports, transitively.
//
// A Client reads it: it lists the methods and fetches the descriptors of
// their message types, from which dynamicpb builds messages and protojson
// reads and writes them (see Client.Method). A stream (Server.HandleStream)
// is listed with Stream set and no types: its message types, and which
// sides stream, come from its service's descriptor.
//
// The service is erpc.reflection.v1.Reflection (see reflectionpb); its
// methods run on worker goroutines (erpc.Background), off the event loop.
package reflection

//go:generate ./gen.sh

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection/reflectionpb"
)

// Method names of the reflection service.
const (
	ListMethodsMethod          = reflectionpb.ReflectionERPC_ListMethods_FullMethodName
	FileContainingSymbolMethod = reflectionpb.ReflectionERPC_FileContainingSymbol_FullMethodName
	FileByFilenameMethod       = reflectionpb.ReflectionERPC_FileByFilename_FullMethodName
)

// Register registers the reflection service on srv, which must not serve
// yet. It describes every method srv has when it is asked, so it may be
// registered first or last. opts apply to its methods after
// erpc.Background().
func Register(srv *erpc.Server, opts ...erpc.HandlerOption) error {
	return reflectionpb.RegisterReflectionERPCServer(srv, NewServer(srv), append([]erpc.HandlerOption{erpc.Background()}, opts...)...)
}

// Server implements the reflection service for one erpc.Server. Register
// makes and registers one; NewServer is for registering it by other means
// (with reflectionpb.RegisterReflectionERPCServer).
type Server struct {
	srv   *erpc.Server
	files *protoregistry.Files
	cache sync.Map // file path -> []byte, its serialized FileDescriptorProto
}

var _ reflectionpb.ReflectionERPCServer = (*Server)(nil)

// NewServer returns the reflection service of srv's methods, with the
// descriptors of protoregistry.GlobalFiles.
func NewServer(srv *erpc.Server) *Server {
	return &Server{srv: srv, files: protoregistry.GlobalFiles}
}

// ListMethods lists srv's methods, sorted by name.
func (s *Server) ListMethods(context.Context, *reflectionpb.ListMethodsRequest) (*reflectionpb.ListMethodsResponse, error) {
	infos := s.srv.MethodInfos()
	out := &reflectionpb.ListMethodsResponse{Methods: make([]*reflectionpb.Method, 0, len(infos))}
	for _, m := range infos {
		out.Methods = append(out.Methods, &reflectionpb.Method{
			Name: m.Name, RequestType: m.RequestType, ResponseType: m.ResponseType,
			Codec: m.Codec, Background: m.Background, Stream: m.Stream,
		})
	}
	return out, nil
}

// FileContainingSymbol returns the files that define the symbols, with
// their imports.
func (s *Server) FileContainingSymbol(_ context.Context, req *reflectionpb.FileContainingSymbolRequest) (*reflectionpb.FileDescriptorResponse, error) {
	var roots []protoreflect.FileDescriptor
	for _, sym := range req.GetSymbols() {
		d, err := s.files.FindDescriptorByName(protoreflect.FullName(sym))
		if err != nil {
			return nil, erpc.Errorf(erpc.NotFound, "no symbol %q in the server's protobuf registry", sym)
		}
		roots = append(roots, d.ParentFile())
	}
	return s.closure(roots, req.GetKnownFiles())
}

// FileByFilename returns the files of those paths, with their imports.
func (s *Server) FileByFilename(_ context.Context, req *reflectionpb.FileByFilenameRequest) (*reflectionpb.FileDescriptorResponse, error) {
	var roots []protoreflect.FileDescriptor
	for _, name := range req.GetFilenames() {
		fd, err := s.files.FindFileByPath(name)
		if err != nil {
			return nil, erpc.Errorf(erpc.NotFound, "no file %q in the server's protobuf registry", name)
		}
		roots = append(roots, fd)
	}
	return s.closure(roots, req.GetKnownFiles())
}

// closure returns roots and their imports, transitively, each once, every
// file after its imports, less the files known (and theirs).
func (s *Server) closure(roots []protoreflect.FileDescriptor, known []string) (*reflectionpb.FileDescriptorResponse, error) {
	seen := make(map[string]bool, len(known))
	for _, k := range known {
		seen[k] = true
	}
	out := &reflectionpb.FileDescriptorResponse{}
	var visit func(fd protoreflect.FileDescriptor) error
	visit = func(fd protoreflect.FileDescriptor) error {
		if seen[fd.Path()] {
			return nil
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			imp := imports.Get(i).FileDescriptor
			if imp.IsPlaceholder() { // not linked into the program: look it up by path
				found, err := s.files.FindFileByPath(imp.Path())
				if err != nil {
					continue // the client will say which import it lacks
				}
				imp = found
			}
			if err := visit(imp); err != nil {
				return err
			}
		}
		b, err := s.serialized(fd)
		if err != nil {
			return err
		}
		out.FileDescriptorProto = append(out.FileDescriptorProto, b)
		return nil
	}
	for _, fd := range roots {
		if err := visit(fd); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// serialized is fd as a serialized FileDescriptorProto, made once.
func (s *Server) serialized(fd protoreflect.FileDescriptor) ([]byte, error) {
	if b, ok := s.cache.Load(fd.Path()); ok {
		return b.([]byte), nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		return nil, erpc.Errorf(erpc.Internal, "encode the descriptor of %q: %v", fd.Path(), err)
	}
	s.cache.Store(fd.Path(), b)
	return b, nil
}
