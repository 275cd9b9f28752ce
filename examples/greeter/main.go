// Command greeter serves one implementation of a protobuf service over gRPC
// and erpc from one process: gRPC (TCP) for clients that only speak it, erpc
// (UDP) for the fast path. The same Greeter value is registered on both
// servers, and errors keep their codes on both (contrib/grpc). Its
// streaming methods (ListGreeted, server-streaming; Chat, bidirectional)
// are written for gRPC's stream types and served both ways as well: the
// erpc code is generated with grpc_compat=true.
//
//	greeter serve                        # gRPC on tcp 127.0.0.1:50051, erpc on udp 127.0.0.1:50051
//	greeter hello -erpc 127.0.0.1:50051 Ada
//	greeter hello -grpc 127.0.0.1:50051 Ada
//	greeter hello -grpc 127.0.0.1:50051 ""   # the error path: InvalidArgument with a BadRequest detail
//
// With TLS, on both protocols (the flags are erpc's command's and
// grpcurl's): serve presents a certificate, hello trusts its CA.
//
//	greeter serve -cert server.pem -key server.key -erpc 0.0.0.0:50051 -grpc 0.0.0.0:50051
//	greeter hello -cacert ca.pem -erpc greeter.example:50051 Ada
//	greeter hello -cacert ca.pem -servername greeter.example -grpc 10.0.0.7:50051 Ada
//
// Without -cert and -key, serve is plaintext: erpc on loopback as it is,
// on an address other hosts can reach only with -insecure (erpc.Insecure),
// for a network you trust (gRPC does not check: it serves plaintext
// wherever it is told).
//
// The erpc side has erpc's health and reflection services, so the erpc
// command works on it (`erpc 127.0.0.1:50051 list`, `erpc -d '{...}' 127.0.0.1:50051 METHOD`,
// with `-cacert ca.pem` when it serves TLS); the gRPC side has gRPC's,
// for grpcurl and grpc_health_probe.
//
// Its code is generated from proto/greeter/v1/greeter.proto by gen.sh
// (go generate), with protoc-gen-go, protoc-gen-go-grpc and
// protoc-gen-go-erpc.
package main

//go:generate ./gen.sh

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	ghealth "google.golang.org/grpc/health"
	ghealthpb "google.golang.org/grpc/health/grpc_health_v1"
	greflection "google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/erpc-go/erpc"
	"github.com/erpc-go/erpc/codec/protocodec"
	erpcgrpc "github.com/erpc-go/erpc/contrib/grpc"
	"github.com/erpc-go/erpc/examples/greeter/greeterpb"
	"github.com/erpc-go/erpc/health"
	"github.com/erpc-go/erpc/reflection"
)

const usage = `usage:
  greeter serve [-grpc host:port] [-erpc host:port] [-cert FILE -key FILE | -insecure]
      serve greeter.v1.Greeter over gRPC (TCP) and erpc (UDP) until interrupted
  greeter hello (-grpc host:port | -erpc host:port) [-cacert FILE] [-servername NAME] [-insecure] [-timeout d] name
      call SayHello with name, then LastGreeted, over one protocol

  TLS (both protocols):
  -cert FILE -key FILE: serve: the server's certificate chain and its
      private key (PEM); both servers present them.
  -cacert FILE: hello: the CA certificates (PEM) that verify the server
      (default: the system's roots when -servername alone is given).
  -servername NAME: hello: the name the server's certificate must have
      (default: the target's host).
  Without them both sides are plaintext:
  -insecure: erpc in plaintext to or on an address other hosts can reach
      (erpc.Insecure); without it erpc refuses such an address, as it
      should outside a network you trust. Loopback needs no flag.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "greeter:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run runs the command args name; serve serves until ctx is done.
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("greeter "+args[0], flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage) }
	grpcAddr := fs.String("grpc", "", "gRPC address (TCP)")
	erpcAddr := fs.String("erpc", "", "erpc address (UDP: host:port or udp://host:port; or shm:///path)")
	plaintext := fs.Bool("insecure", false, "erpc in plaintext beyond loopback (erpc.Insecure)")
	timeout := 5 * time.Second
	var sec tlsFlags // tls.go
	switch args[0] {
	case "serve":
		fs.StringVar(&sec.cert, "cert", "", "TLS: a PEM `file` of the server's certificate chain (with -key)")
		fs.StringVar(&sec.key, "key", "", "TLS: a PEM `file` of the server's private key (with -cert)")
	case "hello":
		fs.DurationVar(&timeout, "timeout", timeout, "the calls' deadline")
		fs.StringVar(&sec.cacert, "cacert", "", "TLS: a PEM `file` of the CA certificates that verify the server")
		fs.StringVar(&sec.serverName, "servername", "", "TLS: the `name` the server's certificate must have (default: the target's host)")
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return otherCommandsFlag(err, args[0])
	}
	if args[0] == "serve" {
		if fs.NArg() != 0 {
			return fmt.Errorf("serve takes no arguments: %q\n%s", fs.Args(), usage)
		}
		creds, opts, err := sec.serverSecurity(*plaintext)
		if err != nil {
			return err
		}
		return serve(ctx, cmp.Or(*grpcAddr, "127.0.0.1:50051"), cmp.Or(*erpcAddr, "127.0.0.1:50051"), creds, out, opts...)
	}
	if fs.NArg() != 1 || (*grpcAddr == "") == (*erpcAddr == "") {
		return fmt.Errorf("hello takes -grpc or -erpc, and a name\n%s", usage)
	}
	cfg, err := sec.clientTLS(*plaintext)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	target := cmp.Or(*grpcAddr, *erpcAddr)
	c, closeClient, err := dial(ctx, *grpcAddr, *erpcAddr, grpcCredentials(cfg), erpcOptions(cfg, *plaintext)...)
	if err != nil {
		return adviseTLS(err, target, cfg != nil)
	}
	defer closeClient()
	return adviseTLS(hello(ctx, c, fs.Arg(0), out), target, cfg != nil)
}

// servers are the two servers of one Greeter.
type servers struct {
	grpc      *grpc.Server
	grpcLis   net.Listener
	grpcDone  chan error
	erpc      *erpc.Endpoint
	grpcCheck *ghealth.Server
	erpcCheck *health.Server
}

// start serves impl over gRPC at grpcAddr (TCP) and erpc at erpcAddr,
// listening with opts, both in plaintext unless opts has erpc.WithTLS.
func start(impl *Greeter, grpcAddr, erpcAddr string, opts ...erpc.Option) (*servers, error) {
	return startWith(impl, grpcAddr, erpcAddr, nil, opts...)
}

// startWith is start with gRPC's transport credentials: TLS, or
// plaintext when nil.
func startWith(impl *Greeter, grpcAddr, erpcAddr string, grpcCreds credentials.TransportCredentials, opts ...erpc.Option) (*servers, error) {
	s := &servers{grpcDone: make(chan error, 1), grpcCheck: ghealth.NewServer(), erpcCheck: health.NewServer()}

	// erpc: the greeter, health and reflection. The gRPC statuses
	// SayHello returns reach erpc callers with their code and details as
	// they are: no interceptor is needed.
	esrv := erpc.NewServer()
	if err := greeterpb.RegisterGreeterERPCServer(esrv, impl); err != nil {
		return nil, err
	}
	if err := health.Register(esrv, s.erpcCheck); err != nil {
		return nil, err
	}
	if err := reflection.Register(esrv); err != nil {
		return nil, err
	}

	// gRPC: the same greeter, gRPC's health and reflection. The
	// interceptor turns the *erpc.Errors LastGreeted returns into gRPC
	// statuses.
	gopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(erpcgrpc.GRPCServerInterceptor())}
	if grpcCreds != nil {
		gopts = append(gopts, grpc.Creds(grpcCreds))
	}
	s.grpc = grpc.NewServer(gopts...)
	greeterpb.RegisterGreeterServer(s.grpc, impl)
	ghealthpb.RegisterHealthServer(s.grpc, s.grpcCheck)
	greflection.Register(s.grpc)

	var err error
	if s.grpcLis, err = net.Listen("tcp", grpcAddr); err != nil {
		return nil, err
	}
	if s.erpc, err = esrv.Listen(erpcAddr, opts...); err != nil {
		s.grpcLis.Close()
		return nil, err
	}
	go func() { s.grpcDone <- s.grpc.Serve(s.grpcLis) }()
	for _, svc := range []string{"", "greeter.v1.Greeter"} {
		s.grpcCheck.SetServingStatus(svc, ghealthpb.HealthCheckResponse_SERVING)
		s.erpcCheck.SetServingStatus(svc, health.Serving)
	}
	return s, nil
}

// stop tells health checkers the servers are going, then drains both.
func (s *servers) stop(ctx context.Context) {
	s.grpcCheck.Shutdown()
	s.erpcCheck.Shutdown()
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	s.erpc.Shutdown(ctx)
	select {
	case <-stopped:
	case <-ctx.Done():
		s.grpc.Stop()
		<-stopped
	}
}

// serve serves a Greeter until ctx is done, with grpcCreds on gRPC and
// opts on erpc.
func serve(ctx context.Context, grpcAddr, erpcAddr string, grpcCreds credentials.TransportCredentials, out io.Writer, opts ...erpc.Option) error {
	s, err := startWith(NewGreeter(), grpcAddr, erpcAddr, grpcCreds, opts...)
	if err != nil {
		return err
	}
	security := "plaintext"
	if grpcCreds != nil && grpcCreds.Info().SecurityProtocol == "tls" {
		security = "TLS"
	}
	fmt.Fprintf(out, "greeter.v1.Greeter: gRPC on tcp %s, erpc on %s, %s\n", s.grpcLis.Addr(), s.erpc.Target(), security)
	select {
	case <-ctx.Done():
	case err = <-s.grpcDone:
	}
	shutdown, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShutdown()
	s.stop(shutdown)
	return err
}

// client is the greeter's client API, common to the two protocols: the
// erpc client, generated with grpc_compat=true, is a GreeterClient too.
type client = greeterpb.GreeterClient

// dial returns a client over gRPC, with grpcCreds, if grpcAddr is set,
// else over erpc, with opts.
func dial(ctx context.Context, grpcAddr, erpcAddr string, grpcCreds credentials.TransportCredentials, opts ...erpc.Option) (client, func(), error) {
	if grpcAddr != "" {
		conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(grpcCreds))
		if err != nil {
			return nil, nil, err
		}
		return greeterpb.NewGreeterClient(conn), func() { conn.Close() }, nil
	}
	s, err := erpc.Dial(ctx, erpcAddr, opts...)
	if err != nil {
		return nil, nil, err
	}
	return greeterpb.NewGreeterERPCClient(s), func() { s.Close() }, nil
}

// hello greets name and asks when it was last greeted.
func hello(ctx context.Context, c client, name string, out io.Writer) error {
	r, err := c.SayHello(ctx, &greeterpb.HelloRequest{Name: name})
	if err != nil {
		return fmt.Errorf("SayHello: %s", describe(err))
	}
	fmt.Fprintln(out, r.GetMessage())
	l, err := c.LastGreeted(ctx, &greeterpb.LastGreetedRequest{Name: name})
	if err != nil {
		return fmt.Errorf("LastGreeted: %s", describe(err))
	}
	fmt.Fprintf(out, "greeted %q %d times, last at %s\n", name, l.GetCount(), l.GetAt().AsTime().Local().Format(time.RFC3339Nano))
	return nil
}

// describe says what err's code, message and details are, alike for the
// errors of both protocols.
func describe(err error) string {
	var e *erpc.Error
	var details []proto.Message
	code, msg := "", err.Error()
	switch st, ok := status.FromError(err); {
	case errors.As(err, &e):
		code, msg = e.Code.String(), e.Msg
		details, _ = protocodec.Details(e)
	case ok:
		code, msg = st.Code().String(), st.Message()
		for _, d := range st.Details() {
			if m, ok := d.(proto.Message); ok {
				details = append(details, m)
			}
		}
	}
	s := fmt.Sprintf("code %s: %s", code, msg)
	for _, d := range details {
		b, _ := protojson.Marshal(d)
		s += fmt.Sprintf("\n  detail %s: %s", d.ProtoReflect().Descriptor().FullName(), b)
	}
	return s
}
