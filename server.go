package erpc

import (
	"context"
	"fmt"
	"runtime/pprof"
	"sort"
	"sync"
)

// Server is a set of handlers. Register them all, then serve: Listen opens
// an endpoint that answers with these handlers from its first packet, so
// a client that reaches a server while it starts (or restarts) never gets
// Unimplemented for a method the server has. Once a server serves, it
// refuses new handlers. One Server may serve several endpoints.
//
//	srv := erpc.NewServer()
//	srv.Handle("Echo", func(ctx context.Context, req []byte) ([]byte, error) {
//		return req, nil
//	})
//	ep, err := srv.Listen("0.0.0.0:31850", erpc.WithTLS(cfg)) // or erpc.Insecure(): see tls_policy.go
type Server struct {
	mu           sync.Mutex
	table        *handlerTable // replaced, never changed, once serving
	serving      bool
	interceptors []UnaryServerInterceptor
	intercept    UnaryServerInterceptor // the chain, composed once
	// Stream handlers by name (stream.go), and their interceptors.
	streams            map[string]*streamHandler
	streamInterceptors []StreamServerInterceptor
	streamIntercept    StreamServerInterceptor
}

// NewServer returns a server with no handlers.
func NewServer(opts ...ServerOption) *Server {
	s := &Server{table: &handlerTable{byID: map[uint32]*handler{}}}
	for _, o := range opts {
		o(s)
	}
	s.intercept = chainServer(s.interceptors)
	s.streamIntercept = chainStreamServer(s.streamInterceptors)
	return s
}

// Listen opens an endpoint on addr (see the package-level Listen for the
// address forms) that serves s's handlers. From this call on, s refuses new
// handlers. The client-only form "shm://" (no socket path), and a
// transport given with WithTransport that cannot be dialed (its Target is
// "": transport.Targeter), are refused with InvalidArgument, since no
// client could reach them; the caller keeps such a transport. An address
// other hosts can reach ("0.0.0.0:31850", ":31850", an interface's
// address) needs WithTLS or Insecure, or fails with InvalidArgument
// naming both (see WithTLS).
func (s *Server) Listen(addr string, opt ...Option) (*Endpoint, error) {
	s.mu.Lock()
	s.serving = true
	s.mu.Unlock()
	return listen(addr, s, opt)
}

// MethodInfo describes a registered method, for reflection services and
// tools.
type MethodInfo struct {
	Name string
	// RequestType and ResponseType name a typed method's message types
	// as its codec names them (a protobuf message's full name), and are
	// empty for raw handlers and types without such a name.
	RequestType, ResponseType string
	Codec                     string // the typed method's codec ("proto", "json"...), "" for raw handlers
	Background                bool
	Stream                    bool // a stream handler (HandleStream)
}

// MethodInfos describes the methods registered so far, sorted by name.
func (s *Server) MethodInfos() []MethodInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*handler]bool{}
	var out []MethodInfo
	for _, h := range s.table.byID {
		if !seen[h] && !isInternalMethod(h.name) {
			seen[h] = true
			info := h.info
			info.Name, info.Background = h.name, h.background
			out = append(out, info)
		}
	}
	for name := range s.streams {
		out = append(out, MethodInfo{Name: name, Background: true, Stream: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Methods lists the methods registered so far, sorted.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*handler]bool{}
	var names []string
	for _, h := range s.table.byID {
		if !seen[h] && !isInternalMethod(h.name) {
			seen[h] = true
			names = append(names, h.name)
		}
	}
	for name := range s.streams {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// register adds h under its method's ID, and under extra IDs too (a
// typed method's, see typedID).
func (s *Server) register(h *handler, extra ...uint32) error {
	if h.name == "" {
		return &Error{Code: InvalidArgument, Msg: "register a handler: empty method name"}
	}
	if h.run == nil {
		return &Error{Code: InvalidArgument, Msg: fmt.Sprintf("register %q: nil handler", h.name)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return &Error{Code: FailedPrecondition, Msg: fmt.Sprintf(
			"register %q: the server already serves; register every handler before Listen", h.name)}
	}
	if s.streams[h.name] != nil {
		return &Error{Code: AlreadyExists, Msg: fmt.Sprintf("method %q registered twice", h.name)}
	}
	ids := append([]uint32{methodID(h.name)}, extra...)
	for _, id := range ids {
		if prev := s.table.byID[id]; prev != nil {
			if prev.name == h.name {
				return &Error{Code: AlreadyExists, Msg: fmt.Sprintf("method %q registered twice", h.name)}
			}
			return &Error{Code: AlreadyExists, Msg: fmt.Sprintf(
				"methods %q and %q have the same ID %#x on the wire; rename one", prev.name, h.name, id)}
		}
	}
	for _, id := range ids {
		s.table.byID[id] = h
	}
	h.idx = s.table.n
	s.table.n++
	h.labels = pprof.WithLabels(context.Background(), pprof.Labels("erpc.method", h.name))
	return nil
}
