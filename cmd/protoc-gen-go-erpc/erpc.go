package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/erpc-go/erpc"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

const (
	contextPackage    = protogen.GoImportPath("context")
	ioPackage         = protogen.GoImportPath("io")
	grpcPackage       = protogen.GoImportPath("google.golang.org/grpc")
	erpcgrpcPackage   = protogen.GoImportPath("github.com/erpc-go/erpc/contrib/grpc")
	erpcPackage       = protogen.GoImportPath("github.com/erpc-go/erpc")
	protocodecPackage = protogen.GoImportPath("github.com/erpc-go/erpc/codec/protocodec")
)

// generate is the plug-in: it declares what it supports and writes one
// _erpc.pb.go file per .proto file with services.
func generate(gen *protogen.Plugin, cfg config) error {
	gen.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL |
		pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	// The editions protoc-gen-go v1.36 supports: the messages the
	// generated code names come from it.
	gen.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
	gen.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2024
	for _, f := range gen.Files {
		if !f.Generate || len(f.Services) == 0 {
			continue
		}
		if err := checkCollisions(f); err != nil {
			return err
		}
		if err := checkIdentifiers(gen, f, cfg); err != nil {
			return err
		}
		generateFile(gen, f, cfg)
	}
	return nil
}

// fullMethodName is a method's name on the wire, as gRPC spells it.
func fullMethodName(m *protogen.Method) string {
	return fmt.Sprintf("/%s/%s", m.Parent.Desc.FullName(), m.Desc.Name())
}

// methodID is erpc's ID of a method name on the wire.
func methodID(name string) uint32 { return erpc.MethodID(name) }

// checkCollisions refuses a service two of whose methods have the same
// erpc ID: its Register function could never succeed. Methods of different
// services may still collide; erpc.Server refuses that when both are
// registered on one server.
func checkCollisions(f *protogen.File) error {
	for _, s := range f.Services {
		seen := map[uint32]string{}
		for _, m := range s.Methods {
			name := fullMethodName(m)
			id := methodID(name)
			if prev, ok := seen[id]; ok {
				return fmt.Errorf("%s: methods %s and %s of service %s have the same erpc method ID %#x "+
					"(the FNV-1a hash of the name), so erpc cannot serve both: rename one",
					f.Desc.Path(), prev, name, s.Desc.FullName(), id)
			}
			seen[id] = name
		}
	}
	return nil
}

// kind is a method's shape.
type kind int

const (
	unary kind = iota
	serverStreaming
	clientStreaming
	bidiStreaming
)

func kindOf(m *protogen.Method) kind {
	switch c, s := m.Desc.IsStreamingClient(), m.Desc.IsStreamingServer(); {
	case c && s:
		return bidiStreaming
	case c:
		return clientStreaming
	case s:
		return serverStreaming
	}
	return unary
}

func hasStreams(s *protogen.Service) bool {
	for _, m := range s.Methods {
		if kindOf(m) != unary {
			return true
		}
	}
	return false
}

// names are the identifiers generated for one service.
type names struct {
	client, clientImpl, newClient, server, unimplemented, register string
	// The native (not grpc_compat) stream types' implementations.
	serverStream, clientStream string
}

func namesOf(s *protogen.Service) names {
	n := s.GoName + "ERPC"
	return names{
		client:        n + "Client",
		clientImpl:    unexport(n + "Client"),
		newClient:     "New" + n + "Client",
		server:        n + "Server",
		unimplemented: "Unimplemented" + n + "Server",
		register:      "Register" + n + "Server",
		serverStream:  unexport(n + "ServerStream"),
		clientStream:  unexport(n + "ClientStream"),
	}
}

func constName(m *protogen.Method) string {
	return m.Parent.GoName + "ERPC_" + m.GoName + "_FullMethodName"
}

// streamName is the native stream interface of a streaming method, as
// its server (side "Server") or client ("Client") sees it.
func streamName(m *protogen.Method, side string) string {
	return m.Parent.GoName + "ERPC_" + m.GoName + side
}

func unexport(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// serviceComments writes the service's comments from the .proto file
// (after a doc comment's first paragraph).
func serviceComments(g *protogen.GeneratedFile, s *protogen.Service, isDeprecated bool) {
	if c := s.Comments.Leading; c != "" {
		g.P("//")
		g.P(strings.TrimSuffix(c.String(), "\n"))
	}
	deprecated(g, isDeprecated)
}

func methodComments(g *protogen.GeneratedFile, m *protogen.Method) {
	if c := m.Comments.Leading; c != "" {
		g.P(strings.TrimSuffix(c.String(), "\n"))
	}
	if m.Desc.Options().(*descriptorpb.MethodOptions).GetDeprecated() {
		if m.Comments.Leading != "" {
			g.P("//")
		}
		g.P("// Deprecated: Do not use.")
	}
}

func deprecated(g *protogen.GeneratedFile, isDeprecated bool) {
	if isDeprecated {
		g.P("//")
		g.P("// Deprecated: Do not use.")
	}
}

// checkIdentifiers refuses a file one of whose methods cannot be
// generated because an identifier it needs is already declared in its Go
// package: by a message or enum protoc-gen-go writes there, or by another
// of the plug-in's own declarations. The error names the method.
func checkIdentifiers(gen *protogen.Plugin, f *protogen.File, cfg config) error {
	taken := map[string]string{}
	var messages func([]*protogen.Message)
	messages = func(ms []*protogen.Message) {
		for _, m := range ms {
			taken[m.GoIdent.GoName] = "message " + string(m.Desc.FullName())
			for _, e := range m.Enums {
				taken[e.GoIdent.GoName] = "enum " + string(e.Desc.FullName())
			}
			messages(m.Messages)
		}
	}
	for _, other := range gen.Files {
		if other.GoImportPath != f.GoImportPath {
			continue
		}
		messages(other.Messages)
		for _, e := range other.Enums {
			taken[e.GoIdent.GoName] = "enum " + string(e.Desc.FullName())
		}
	}
	for _, s := range f.Services {
		n := namesOf(s)
		ids := []string{n.client, n.clientImpl, n.newClient, n.server, n.unimplemented, n.register}
		if !cfg.grpcCompat && hasStreams(s) {
			ids = append(ids, n.serverStream, n.clientStream)
		}
		for _, id := range ids {
			if by, ok := taken[id]; ok {
				return fmt.Errorf("%s: service %s cannot be generated: its identifier %s is already declared (by %s)",
					f.Desc.Path(), s.Desc.FullName(), id, by)
			}
			taken[id] = "service " + string(s.Desc.FullName())
		}
		for _, m := range s.Methods {
			ids := []string{constName(m)}
			if !cfg.grpcCompat && kindOf(m) != unary {
				ids = append(ids, streamName(m, "Server"), streamName(m, "Client"))
			}
			for _, id := range ids {
				if by, ok := taken[id]; ok {
					return fmt.Errorf("%s: method %s cannot be generated: its identifier %s is already declared (by %s); rename one",
						f.Desc.Path(), fullMethodName(m), id, by)
				}
				taken[id] = "method " + fullMethodName(m)
			}
		}
	}
	return nil
}
