package health_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/health"
	"github.com/erpc-go/erpc/health/healthpb"
)

// serve registers h on a new server, listens on a mem:// endpoint of a
// name of the test's own and returns a session to it.
func serve(t *testing.T, h *health.Server) *erpc.Session {
	t.Helper()
	srv := erpc.NewServer()
	if err := health.Register(srv, h); err != nil {
		t.Fatal(err)
	}
	ep, err := srv.Listen(fmt.Sprintf("mem://health-%s-%d", t.Name(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func check(t *testing.T, s *erpc.Session, service string, want health.Status) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := health.Check(ctx, s, service)
	if err != nil {
		t.Fatalf("Check(%q): %v", service, err)
	}
	if got != want {
		t.Fatalf("Check(%q) = %v, want %v", service, got, want)
	}
}

func TestCheck(t *testing.T) {
	h := health.NewServer()
	s := serve(t, h)

	check(t, s, "", health.Serving) // the whole server, from the start
	check(t, s, "greeter.v1.Greeter", health.ServiceUnknown)

	h.SetServingStatus("greeter.v1.Greeter", health.Serving)
	check(t, s, "greeter.v1.Greeter", health.Serving)
	h.SetServingStatus("greeter.v1.Greeter", health.NotServing)
	check(t, s, "greeter.v1.Greeter", health.NotServing)
	h.SetServingStatus("", health.NotServing)
	check(t, s, "", health.NotServing)

	h.ClearStatus("greeter.v1.Greeter")
	check(t, s, "greeter.v1.Greeter", health.ServiceUnknown)
}

func TestShutdownResume(t *testing.T) {
	h := health.NewServer()
	s := serve(t, h)
	h.SetServingStatus("a", health.Serving)
	h.SetServingStatus("b", health.Serving)

	h.Shutdown()
	check(t, s, "", health.NotServing)
	check(t, s, "a", health.NotServing)
	h.SetServingStatus("a", health.Serving) // ignored while shut down
	check(t, s, "a", health.NotServing)
	check(t, s, "c", health.ServiceUnknown)

	h.Resume()
	check(t, s, "", health.Serving)
	check(t, s, "a", health.Serving)
	check(t, s, "b", health.Serving)
	h.SetServingStatus("b", health.NotServing)
	check(t, s, "b", health.NotServing)
}

func TestList(t *testing.T) {
	h := health.NewServer()
	s := serve(t, h)
	h.SetServingStatus("a", health.NotServing)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := healthpb.NewHealthERPCClient(s).List(ctx, &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{
		"":  {Status: health.Serving},
		"a": {Status: health.NotServing},
	}}
	if !proto.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

// TestNoHealthService: a client of a server without the service learns
// that it has none (Unimplemented), not a status.
func TestNoHealthService(t *testing.T) {
	srv := erpc.NewServer()
	ep, err := srv.Listen(fmt.Sprintf("mem://nohealth-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := health.Check(ctx, s, ""); !errors.Is(err, erpc.ErrUnimplemented) {
		t.Fatalf("Check on a server without health: %v, want Unimplemented", err)
	}
}

// TestConcurrent sets statuses while clients check them (for the race
// detector).
func TestConcurrent(t *testing.T) {
	h := health.NewServer()
	s := serve(t, h)
	stop := make(chan struct{})
	var flipper sync.WaitGroup
	flipper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Microsecond):
			}
			st := health.Serving
			if i%2 == 1 {
				st = health.NotServing
			}
			h.SetServingStatus("flip", st)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var checkers sync.WaitGroup
	for range 4 {
		checkers.Go(func() {
			for range 200 {
				st, err := health.Check(ctx, s, "flip")
				if err != nil {
					t.Error(err)
					return
				}
				if st != health.Serving && st != health.NotServing && st != health.ServiceUnknown {
					t.Errorf("status %v", st)
					return
				}
			}
		})
	}
	checkers.Wait()
	close(stop)
	flipper.Wait()
}

// TestNotInGRPCNamespace: the service's protobuf names are erpc's own, so
// a program can link gRPC's health service beside it.
func TestNotInGRPCNamespace(t *testing.T) {
	fd := healthpb.File_erpc_health_v1_health_proto
	if fd.Package() != "erpc.health.v1" || fd.Path() != "erpc/health/v1/health.proto" {
		t.Fatalf("package %q, path %q", fd.Package(), fd.Path())
	}
	if health.CheckMethod != "/erpc.health.v1.Health/Check" {
		t.Fatalf("CheckMethod = %q", health.CheckMethod)
	}
}
