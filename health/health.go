// Package health is erpc's health service, of the shape of gRPC's
// grpc.health.v1: a serving status per service name, set by the
// application, that clients (load balancers, orchestrators, the erpc
// command's `erpc health`) ask for. The name "" stands for the server as a
// whole.
//
//	srv := erpc.NewServer()
//	h := health.NewServer() // "" is SERVING
//	if err := health.Register(srv, h); err != nil { ... }
//	h.SetServingStatus("greeter.v1.Greeter", health.Serving)
//	ep, err := srv.Listen(addr)
//	...
//	h.Shutdown()          // every service NOT_SERVING, before draining
//	ep.Shutdown(ctx)
//
// Its protobuf package is erpc.health.v1 (see healthpb), not gRPC's, so a
// program can link both. It differs from gRPC's service in two ways: Check
// answers a name it has no status for with SERVICE_UNKNOWN instead of the
// error NotFound, and there is no Watch (erpc's calls are unary).
package health

//go:generate ./gen.sh

import (
	"context"
	"sync"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/health/healthpb"
)

// Status is a serving status.
type Status = healthpb.HealthCheckResponse_ServingStatus

// The serving statuses.
const (
	Unknown        = healthpb.HealthCheckResponse_UNKNOWN
	Serving        = healthpb.HealthCheckResponse_SERVING
	NotServing     = healthpb.HealthCheckResponse_NOT_SERVING
	ServiceUnknown = healthpb.HealthCheckResponse_SERVICE_UNKNOWN // only in answers: no status for the name
)

// Method names of the health service, as its clients call them.
const (
	CheckMethod = healthpb.HealthERPC_Check_FullMethodName
	ListMethod  = healthpb.HealthERPC_List_FullMethodName
)

// Server holds the serving statuses and answers the health service's
// calls. It is safe for concurrent use; its handlers are quick (a map
// look-up under a lock) and run inline on the endpoint's event loop.
type Server struct {
	mu       sync.RWMutex
	statuses map[string]Status
	shutdown bool
}

var _ healthpb.HealthERPCServer = (*Server)(nil)

// NewServer returns a health server whose only status is "" (the whole
// server): SERVING.
func NewServer() *Server {
	return &Server{statuses: map[string]Status{"": Serving}}
}

// Register registers h's methods on srv, which must not serve yet.
func Register(srv *erpc.Server, h *Server, opts ...erpc.HandlerOption) error {
	return healthpb.RegisterHealthERPCServer(srv, h, opts...)
}

// SetServingStatus sets the status of service ("" for the whole server).
// After Shutdown, it is ignored until Resume.
func (s *Server) SetServingStatus(service string, status Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.shutdown {
		s.statuses[service] = status
	}
}

// ClearStatus forgets service's status: Check answers SERVICE_UNKNOWN for
// it from then on.
func (s *Server) ClearStatus(service string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.statuses, service)
}

// Shutdown sets every status to NOT_SERVING and ignores later
// SetServingStatus calls until Resume. Call it when the server starts
// draining, so health checkers steer clients away first.
func (s *Server) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = true
	for k := range s.statuses {
		s.statuses[k] = NotServing
	}
}

// Resume sets every status to SERVING and accepts SetServingStatus again.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = false
	for k := range s.statuses {
		s.statuses[k] = Serving
	}
}

// Status returns service's status, and whether it has one.
func (s *Server) Status(service string) (Status, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.statuses[service]
	return st, ok
}

// Check answers with the status of the service the request names, or
// SERVICE_UNKNOWN if it has none.
func (s *Server) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, ok := s.Status(req.GetService())
	if !ok {
		st = ServiceUnknown
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// List answers with every status.
func (s *Server) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := &healthpb.HealthListResponse{Statuses: make(map[string]*healthpb.HealthCheckResponse, len(s.statuses))}
	for k, st := range s.statuses {
		out.Statuses[k] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

// Check asks the health service over s for service's status ("" for the
// whole server). A server without the health service fails with
// Unimplemented.
func Check(ctx context.Context, s *erpc.Session, service string) (Status, error) {
	resp, err := healthpb.NewHealthERPCClient(s).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return Unknown, err
	}
	return resp.GetStatus(), nil
}
