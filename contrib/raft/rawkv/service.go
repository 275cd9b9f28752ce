package rawkv

import (
	"sync/atomic"

	"github.com/erpc-go/erpc"
)

// Service is a replica's methods (MethodMsg, MethodPut, MethodGet) on an
// erpc server. The server serves from its first packet, but a replica
// needs the endpoint that the server's Listen opens (it dials its peers
// from it and runs on its loop): so Register adds the methods before
// Listen, and StartReplica attaches the replica once it is ready. Until
// then the methods answer Unavailable: a peer's raft treats that as a lost
// message and a client tries another replica.
//
//	srv := erpc.NewServer()
//	svc, err := rawkv.Register(srv)
//	ep, err := srv.Listen(addr)
//	r, err := rawkv.StartReplica(ctx, rawkv.Config{ID: id, Peers: peers, Endpoint: ep, Service: svc})
type Service struct {
	r atomic.Pointer[Replica]
}

// Register adds the replica's methods to srv, which must not serve yet.
func Register(srv *erpc.Server) (*Service, error) {
	svc := &Service{}
	for _, h := range []struct {
		m  string
		fn func(erpc.Request)
	}{{MethodMsg, svc.serveMsg}, {MethodPut, svc.serveKV}, {MethodGet, svc.serveKV}} {
		// OnLoop: the handlers use the replica's loop-owned state, so
		// they must never be handed off the loop however long they run.
		if err := srv.HandleRaw(h.m, h.fn, erpc.OnLoop()); err != nil {
			return nil, err
		}
	}
	return svc, nil
}

var errStarting = erpc.Errorf(erpc.Unavailable, "rawkv: replica starting")

func (svc *Service) serveMsg(req erpc.Request) {
	if r := svc.r.Load(); r != nil {
		r.serveMsg(req)
		return
	}
	req.RespondError(errStarting)
}

func (svc *Service) serveKV(req erpc.Request) {
	if r := svc.r.Load(); r != nil {
		r.serveKV(req)
		return
	}
	req.RespondError(errStarting)
}
