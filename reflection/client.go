package reflection

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/reflection/reflectionpb"
)

// Client reads a server's reflection service. It keeps the file
// descriptors it fetched, so it asks for each file once. It is safe for
// concurrent use.
type Client struct {
	c reflectionpb.ReflectionERPCClient

	mu    sync.Mutex
	files *protoregistry.Files // the server's descriptors fetched so far
	types *dynamicpb.Types     // over files
}

// NewClient returns a client of the reflection service of the server s
// calls.
func NewClient(s *erpc.Session) *Client {
	files := new(protoregistry.Files)
	return &Client{c: reflectionpb.NewReflectionERPCClient(s), files: files, types: dynamicpb.NewTypes(files)}
}

// ListMethods lists the server's methods, sorted by name. A server without
// the reflection service fails with Unimplemented, saying so.
func (c *Client) ListMethods(ctx context.Context) ([]erpc.MethodInfo, error) {
	resp, err := c.c.ListMethods(ctx, &reflectionpb.ListMethodsRequest{})
	if err != nil {
		return nil, noReflection(err)
	}
	out := make([]erpc.MethodInfo, 0, len(resp.GetMethods()))
	for _, m := range resp.GetMethods() {
		out = append(out, erpc.MethodInfo{Name: m.GetName(), RequestType: m.GetRequestType(),
			ResponseType: m.GetResponseType(), Codec: m.GetCodec(), Background: m.GetBackground(), Stream: m.GetStream()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// FindSymbol returns the descriptor of the message, enum, service, method,
// field or extension of that full name, fetching the file that defines it,
// and its imports, from the server the first time. A symbol the server
// does not know fails with NotFound.
func (c *Client) FindSymbol(ctx context.Context, name string) (protoreflect.Descriptor, error) {
	c.mu.Lock()
	d, err := c.files.FindDescriptorByName(protoreflect.FullName(name))
	known := c.knownLocked()
	c.mu.Unlock()
	if err == nil {
		return d, nil
	}
	resp, err := c.c.FileContainingSymbol(ctx, &reflectionpb.FileContainingSymbolRequest{Symbols: []string{name}, KnownFiles: known})
	if err != nil {
		return nil, noReflection(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.addLocked(resp.GetFileDescriptorProto()); err != nil {
		return nil, err
	}
	d, err = c.files.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil, &erpc.Error{Code: erpc.NotFound, Msg: fmt.Sprintf("the server's descriptors do not define %q", name), Cause: err}
	}
	return d, nil
}

// FindMessage is FindSymbol for a message type.
func (c *Client) FindMessage(ctx context.Context, name string) (protoreflect.MessageDescriptor, error) {
	d, err := c.FindSymbol(ctx, name)
	if err != nil {
		return nil, err
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, &erpc.Error{Code: erpc.InvalidArgument, Msg: fmt.Sprintf("%q is not a message type but a %s", name, kind(d))}
	}
	return md, nil
}

// Files returns the descriptors fetched so far. Read it only while no
// other goroutine uses the client: fetching adds to it.
func (c *Client) Files() *protoregistry.Files { return c.files }

// Resolver finds message types and extensions for protojson and
// proto.UnmarshalOptions (their Resolver option), which need it for Any
// fields and extensions: among the descriptors fetched so far, and, for a
// message type or extension found by name or type URL, from the server,
// with ctx. Its types make dynamicpb messages.
func (c *Client) Resolver(ctx context.Context) Resolver { return resolver{c, ctx} }

// Resolver is what Client.Resolver returns.
type Resolver interface {
	protoregistry.MessageTypeResolver
	protoregistry.ExtensionTypeResolver
}

type resolver struct {
	c   *Client
	ctx context.Context
}

func (r resolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	md, err := r.c.FindMessage(r.ctx, string(name))
	if err != nil {
		return nil, notFound(err)
	}
	return dynamicpb.NewMessageType(md), nil
}

func (r resolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	return r.FindMessageByName(protoreflect.FullName(url[strings.LastIndexByte(url, '/')+1:]))
}

func (r resolver) FindExtensionByName(field protoreflect.FullName) (protoreflect.ExtensionType, error) {
	d, err := r.c.FindSymbol(r.ctx, string(field))
	if err != nil {
		return nil, notFound(err)
	}
	if xd, ok := d.(protoreflect.FieldDescriptor); ok && xd.IsExtension() {
		return dynamicpb.NewExtensionType(xd), nil
	}
	return nil, protoregistry.NotFound
}

// FindExtensionByNumber looks among the descriptors fetched so far only:
// the service finds files by symbol or path, not by extension number.
func (r resolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return r.c.types.FindExtensionByNumber(message, field)
}

// notFound is protoregistry.NotFound for a symbol the server lacks, err
// for other failures.
func notFound(err error) error {
	if code := erpc.CodeOf(err); code == erpc.NotFound || code == erpc.InvalidArgument {
		return protoregistry.NotFound
	}
	return err
}

// Method describes a method to call it with dynamic messages.
type Method struct {
	erpc.MethodInfo
	// Request and Response are the message types of a method whose codec
	// is "proto", and of a stream whose Descriptor is known (its
	// messages are protobuf's, as generated code sends them); nil for
	// other methods.
	Request, Response protoreflect.MessageDescriptor
	// Descriptor is the method in its service's .proto file, for a
	// method named "/package.Service/Method" whose service the server's
	// registry has; nil otherwise.
	Descriptor protoreflect.MethodDescriptor
}

// Method describes the server's method name. A name the server does not
// have fails with NotFound, naming the methods it has.
func (c *Client) Method(ctx context.Context, name string) (*Method, error) {
	methods, err := c.ListMethods(ctx)
	if err != nil {
		return nil, err
	}
	var m *Method
	for _, info := range methods {
		if info.Name == name {
			m = &Method{MethodInfo: info}
			break
		}
	}
	if m == nil {
		return nil, &erpc.Error{Code: erpc.NotFound, Msg: unknownMethod(name, methods)}
	}
	if m.Codec == "proto" && m.RequestType != "" && m.ResponseType != "" {
		if m.Request, err = c.FindMessage(ctx, m.RequestType); err != nil {
			return nil, err
		}
		if m.Response, err = c.FindMessage(ctx, m.ResponseType); err != nil {
			return nil, err
		}
	}
	if svc, meth, ok := SplitMethodName(name); ok {
		d, err := c.FindSymbol(ctx, svc)
		if sd, isSvc := d.(protoreflect.ServiceDescriptor); err == nil && isSvc {
			m.Descriptor = sd.Methods().ByName(protoreflect.Name(meth))
			if m.Stream && m.Descriptor != nil && m.Request == nil {
				m.Request, m.Response = m.Descriptor.Input(), m.Descriptor.Output()
			}
		} else if err != nil && erpc.CodeOf(err) != erpc.NotFound {
			return nil, err
		}
	}
	return m, nil
}

// SplitMethodName splits "/package.Service/Method" into the service's
// full name and the method's name; ok is false for names of other forms.
func SplitMethodName(name string) (service, method string, ok bool) {
	rest, found := strings.CutPrefix(name, "/")
	if !found {
		return "", "", false
	}
	service, method, found = strings.Cut(rest, "/")
	if !found || service == "" || method == "" || strings.Contains(method, "/") {
		return "", "", false
	}
	return service, method, true
}

// unknownMethod says that the server has no method name, and which it has
// that look like it.
func unknownMethod(name string, methods []erpc.MethodInfo) string {
	var near []string
	base := name[strings.LastIndex(name, "/")+1:]
	for _, m := range methods {
		if strings.EqualFold(m.Name, name) || (base != "" && strings.HasSuffix(strings.ToLower(m.Name), "/"+strings.ToLower(base))) ||
			strings.EqualFold(m.Name, "/"+name) {
			near = append(near, m.Name)
		}
	}
	msg := fmt.Sprintf("the server has no method %q", name)
	if len(near) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
	} else if _, _, ok := SplitMethodName(name); !ok && !strings.HasPrefix(name, "/") {
		msg += ` (generated services' methods are named "/package.Service/Method")`
	}
	return msg
}

// knownLocked lists the paths of the files fetched so far.
func (c *Client) knownLocked() []string {
	var known []string
	c.files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		known = append(known, fd.Path())
		return true
	})
	return known
}

// addLocked adds serialized FileDescriptorProtos, each after its imports.
func (c *Client) addLocked(files [][]byte) error {
	for _, b := range files {
		fdp := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(b, fdp); err != nil {
			return &erpc.Error{Code: erpc.Internal, Msg: fmt.Sprintf("decode a file descriptor from the server: %v", err), Cause: err}
		}
		if _, err := c.files.FindFileByPath(fdp.GetName()); err == nil {
			continue // sent again: the client asked before another call added it
		}
		fd, err := protodesc.NewFile(fdp, c.files)
		if err != nil {
			return &erpc.Error{Code: erpc.Internal, Msg: fmt.Sprintf("the server's descriptor of %q: %v", fdp.GetName(), err), Cause: err}
		}
		if err := c.files.RegisterFile(fd); err != nil {
			return &erpc.Error{Code: erpc.Internal, Msg: fmt.Sprintf("the server's descriptor of %q: %v", fdp.GetName(), err), Cause: err}
		}
	}
	return nil
}

// noReflection explains an Unimplemented answer to a reflection call.
func noReflection(err error) error {
	var e *erpc.Error
	if !errors.As(err, &e) || e.Code != erpc.Unimplemented {
		return err
	}
	return &erpc.Error{Code: erpc.Unimplemented, Cause: err, Msg: "the server has no reflection service " +
		"(erpc.reflection.v1.Reflection): register it with reflection.Register(srv) before the server serves"}
}

func kind(d protoreflect.Descriptor) string {
	switch d.(type) {
	case protoreflect.EnumDescriptor:
		return "enum"
	case protoreflect.EnumValueDescriptor:
		return "enum value"
	case protoreflect.ServiceDescriptor:
		return "service"
	case protoreflect.MethodDescriptor:
		return "method"
	case protoreflect.FieldDescriptor:
		return "field"
	case protoreflect.OneofDescriptor:
		return "oneof"
	case protoreflect.FileDescriptor:
		return "file"
	}
	return fmt.Sprintf("%T", d)
}
