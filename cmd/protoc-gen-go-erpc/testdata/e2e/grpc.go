package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	shopv1 "example.com/erpctest/gen/shop/v1"
	"github.com/erpc-go/erpc"
)

// dualCatalog is written for gRPC: it embeds protoc-gen-go-grpc's
// Unimplemented server, and so has gRPC's unexported must-embed method.
// The same type, unchanged, serves erpc.
type dualCatalog struct {
	shopv1.UnimplementedCatalogServer
}

var (
	_ shopv1.CatalogServer     = dualCatalog{}
	_ shopv1.CatalogERPCServer = dualCatalog{}
)

func (dualCatalog) GetItem(_ context.Context, ref *shopv1.Item_Ref) (*shopv1.Item, error) {
	return &shopv1.Item{Ref: ref, Name: "dual " + ref.Sku}, nil
}

func init() {
	checks = append(checks, check{"grpc: one type registers on erpc and on a grpc.Server", func(ctx context.Context, _ *erpc.Session) error {
		impl := dualCatalog{}

		srv := erpc.NewServer()
		if err := shopv1.RegisterCatalogERPCServer(srv, impl); err != nil {
			return err
		}
		ep, err := srv.Listen("mem://erpc-e2e-dual")
		if err != nil {
			return err
		}
		defer ep.Close()
		s, err := erpc.Dial(ctx, ep.Target())
		if err != nil {
			return err
		}
		defer s.Close()
		ec := shopv1.NewCatalogERPCClient(s)
		got, err := ec.GetItem(ctx, &shopv1.Item_Ref{Sku: "x"})
		if err != nil {
			return fmt.Errorf("over erpc: %w", err)
		}
		if got.Name != "dual x" {
			return fmt.Errorf("over erpc: %v", got)
		}
		// gRPC's Unimplemented method returns a gRPC status error.
		_, err = ec.ListItems(ctx, &shopv1.ListItemsRequest{})
		switch code := erpc.CodeOf(err); {
		case code == erpc.Unimplemented:
			fmt.Println("   gRPC's Unimplemented error arrives over erpc as Unimplemented")
		case code == erpc.Unknown && strings.Contains(err.Error(), "code = Unimplemented"):
			fmt.Println("   gRPC's Unimplemented error arrives over erpc as Unknown:", err)
		default:
			return fmt.Errorf("gRPC's unimplemented ListItems over erpc: %v", err)
		}

		gs := grpc.NewServer()
		shopv1.RegisterCatalogServer(gs, impl)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go gs.Serve(lis)
		defer gs.Stop()
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		got, err = shopv1.NewCatalogClient(conn).GetItem(ctx, &shopv1.Item_Ref{Sku: "y"})
		if err != nil {
			return fmt.Errorf("over gRPC: %w", err)
		}
		if got.Name != "dual y" {
			return fmt.Errorf("over gRPC: %v", got)
		}
		return nil
	}})
}
