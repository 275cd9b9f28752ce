// Command e2e serves the test services generated from testdata/proto over
// erpc's in-memory network and calls every method. TestEndToEnd builds it
// in a module of generated code; it prints one line per check and exits 1
// if one fails.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	collidev1 "example.com/erpctest/gen/collide/v1"
	commonv1 "example.com/erpctest/gen/common/v1"
	legacyv1 "example.com/erpctest/gen/legacy/v1"
	shopv1 "example.com/erpctest/gen/shop/v1"
	streamv1 "example.com/erpctest/gen/stream/v1"
	"github.com/erpc-go/erpc"
)

// A check calls over s, the session to the server every registration
// registered on. The files built with tags add theirs in init.
type check struct {
	name string
	run  func(ctx context.Context, s *erpc.Session) error
}

var (
	registrations = []func(srv *erpc.Server) error{
		func(srv *erpc.Server) error { return commonv1.RegisterHealthERPCServer(srv, health{}) },
		// Background: Deadline waits.
		func(srv *erpc.Server) error {
			return shopv1.RegisterCatalogERPCServer(srv, theCatalog, erpc.Background())
		},
		func(srv *erpc.Server) error { return shopv1.RegisterCartERPCServer(srv, &cart{}) },
		func(srv *erpc.Server) error { return streamv1.RegisterMixedERPCServer(srv, mixed{}) },
		func(srv *erpc.Server) error {
			return streamv1.RegisterStreamsERPCServer(srv, streamv1.UnimplementedStreamsERPCServer{})
		},
		func(srv *erpc.Server) error { return legacyv1.RegisterLegacyERPCServer(srv, legacy{}) },
	}
	checks []check
)

func main() {
	if err := run(); err != nil {
		fmt.Println("FAIL:", err)
		os.Exit(1)
	}
}

func run() error {
	srv := erpc.NewServer()
	for _, r := range registrations {
		if err := r(srv); err != nil {
			return fmt.Errorf("register: %w", err)
		}
	}
	ep, err := srv.Listen("mem://erpc-e2e")
	if err != nil {
		return err
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := erpc.Dial(ctx, ep.Target())
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println("methods:", strings.Join(srv.Methods(), " "))
	for _, c := range append(coreChecks(), checks...) {
		if err := c.run(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Println("ok", c.name)
	}
	fmt.Println("PASS")
	return nil
}

// --- servers ---

type health struct {
	commonv1.UnimplementedHealthERPCServer
}

// Check tells an unset service (proto3 optional) from an empty one.
func (health) Check(_ context.Context, req *commonv1.HealthCheckRequest) (*commonv1.HealthCheckResponse, error) {
	if req.Service == nil {
		return &commonv1.HealthCheckResponse{Status: commonv1.HealthCheckResponse_STATUS_UNSPECIFIED}, nil
	}
	if *req.Service == "" || *req.Service == "erpctest.shop.v1.Catalog" {
		return &commonv1.HealthCheckResponse{Status: commonv1.HealthCheckResponse_SERVING}, nil
	}
	return &commonv1.HealthCheckResponse{Status: commonv1.HealthCheckResponse_NOT_SERVING}, nil
}

// Now answers with a well-known type, for a well-known type.
func (health) Now(context.Context, *emptypb.Empty) (*timestamppb.Timestamp, error) {
	return timestamppb.Now(), nil
}

var items = []*shopv1.Item{
	{
		Ref:   &shopv1.Item_Ref{Sku: "tea"},
		Name:  "Green tea",
		Price: &commonv1.Money{Currency: "EUR", Units: 4, Nanos: proto.Int32(500_000_000)},
		Note:  proto.String("loose leaf"),
		Tags:  []*shopv1.Item_Tag{{Key: "origin", Value: "JP"}, {Key: "caffeine", Value: "yes"}},
	},
	{
		Ref:   &shopv1.Item_Ref{Sku: "cup"},
		Name:  "Cup",
		Price: &commonv1.Money{Currency: "EUR", Units: 7},
	},
}

type catalog struct {
	shopv1.UnimplementedCatalogERPCServer // Discontinued stays unimplemented
	handlerErr                            chan error
}

func newCatalog() *catalog { return &catalog{handlerErr: make(chan error, 1)} }

// theCatalog is the one registered, so the deadline check can read what
// its handler saw.
var theCatalog = newCatalog()

func (c *catalog) GetItem(_ context.Context, ref *shopv1.Item_Ref) (*shopv1.Item, error) {
	for _, it := range items {
		if it.Ref.Sku == ref.Sku {
			return it, nil
		}
	}
	return nil, erpc.Errorf(erpc.NotFound, "no item %q", ref.Sku)
}

func (c *catalog) ListItems(_ context.Context, req *shopv1.ListItemsRequest) (*shopv1.ListItemsResponse, error) {
	if req.PageSize == nil || int(*req.PageSize) >= len(items) {
		return &shopv1.ListItemsResponse{Items: items}, nil
	}
	n := int(*req.PageSize)
	return &shopv1.ListItemsResponse{Items: items[:n], NextPageToken: proto.String(items[n].Ref.Sku)}, nil
}

func (c *catalog) Deadline(ctx context.Context, req *shopv1.DeadlineRequest) (*shopv1.DeadlineResponse, error) {
	resp := &shopv1.DeadlineResponse{}
	if d, ok := ctx.Deadline(); ok {
		resp.HasDeadline = true
		resp.RemainingMs = time.Until(d).Milliseconds()
	}
	if req.WaitMs > 0 {
		select {
		case <-ctx.Done():
			c.handlerErr <- ctx.Err()
			return nil, ctx.Err() // DeadlineExceeded for the caller, if its own timer did not fire first
		case <-time.After(time.Duration(req.WaitMs) * time.Millisecond):
			c.handlerErr <- nil
		}
	}
	return resp, nil
}

type cart struct {
	shopv1.UnimplementedCartERPCServer
	lines int32
	total commonv1.Money
}

func (c *cart) Add(ctx context.Context, req *shopv1.AddRequest) (*shopv1.AddResponse, error) {
	it, err := theCatalog.GetItem(ctx, req.Ref)
	if err != nil {
		return nil, err
	}
	c.lines++
	c.total.Currency = it.Price.Currency
	c.total.Units += it.Price.Units * int64(req.Quantity)
	nanos := int64(c.total.GetNanos()) + int64(it.Price.GetNanos())*int64(req.Quantity)
	c.total.Units += nanos / 1e9
	c.total.Nanos = proto.Int32(int32(nanos % 1e9))
	return &shopv1.AddResponse{Lines: c.lines, Total: proto.CloneOf(&c.total)}, nil
}

func (c *cart) Total(context.Context, *commonv1.Empty) (*commonv1.Money, error) {
	return proto.CloneOf(&c.total), nil
}

type mixed struct {
	streamv1.UnimplementedMixedERPCServer
}

func (mixed) Unary(_ context.Context, in *streamv1.Chunk) (*streamv1.Chunk, error) {
	return &streamv1.Chunk{Data: append([]byte("echo:"), in.Data...)}, nil
}

func (mixed) Old(context.Context, *streamv1.Chunk) (*streamv1.Chunk, error) {
	return &streamv1.Chunk{Data: []byte("old")}, nil
}

type legacy struct {
	legacyv1.UnimplementedLegacyERPCServer
}

func (legacy) Get(_ context.Context, req *legacyv1.GetRequest) (*legacyv1.GetResponse, error) {
	if req.GetKey() == "known" {
		return &legacyv1.GetResponse{Value: proto.String("value")}, nil
	}
	return &legacyv1.GetResponse{}, nil // Value unset: its default, "none"
}

// --- checks ---

func coreChecks() []check {
	return []check{
		{"health: proto3 optional travels", func(ctx context.Context, s *erpc.Session) error {
			c := commonv1.NewHealthERPCClient(s)
			for _, tc := range []struct {
				service *string
				want    commonv1.HealthCheckResponse_Status
			}{
				{nil, commonv1.HealthCheckResponse_STATUS_UNSPECIFIED},
				{proto.String(""), commonv1.HealthCheckResponse_SERVING},
				{proto.String("nope"), commonv1.HealthCheckResponse_NOT_SERVING},
			} {
				resp, err := c.Check(ctx, &commonv1.HealthCheckRequest{Service: tc.service})
				if err != nil {
					return err
				}
				if resp.Status != tc.want {
					return fmt.Errorf("service %v: status %v, want %v", tc.service, resp.Status, tc.want)
				}
			}
			return nil
		}},
		{"health.Now: well-known types", func(ctx context.Context, s *erpc.Session) error {
			before := time.Now()
			ts, err := commonv1.NewHealthERPCClient(s).Now(ctx, &emptypb.Empty{})
			if err != nil {
				return err
			}
			if t := ts.AsTime(); t.Before(before.Add(-time.Second)) || t.After(time.Now().Add(time.Second)) {
				return fmt.Errorf("now is %v, between %v and %v", t, before, time.Now())
			}
			return nil
		}},
		{"catalog.GetItem: nested and imported messages", func(ctx context.Context, s *erpc.Session) error {
			c := shopv1.NewCatalogERPCClient(s)
			got, err := c.GetItem(ctx, &shopv1.Item_Ref{Sku: "tea"})
			if err != nil {
				return err
			}
			if !proto.Equal(got, items[0]) {
				return fmt.Errorf("got %v, want %v", got, items[0])
			}
			_, err = c.GetItem(ctx, &shopv1.Item_Ref{Sku: "none"})
			return wantCode(err, erpc.NotFound, `no item "none"`)
		}},
		{"catalog.ListItems: optional fields", func(ctx context.Context, s *erpc.Session) error {
			c := shopv1.NewCatalogERPCClient(s)
			all, err := c.ListItems(ctx, &shopv1.ListItemsRequest{})
			if err != nil {
				return err
			}
			if len(all.Items) != 2 || all.NextPageToken != nil {
				return fmt.Errorf("unpaged: %v", all)
			}
			page, err := c.ListItems(ctx, &shopv1.ListItemsRequest{PageSize: proto.Int32(1)})
			if err != nil {
				return err
			}
			if len(page.Items) != 1 || page.GetNextPageToken() != "cup" {
				return fmt.Errorf("page of 1: %v", page)
			}
			return nil
		}},
		{"catalog.Deadline: the caller's deadline reaches the handler", func(ctx context.Context, s *erpc.Session) error {
			c := shopv1.NewCatalogERPCClient(s)
			resp, err := c.Deadline(ctx, &shopv1.DeadlineRequest{})
			if err != nil {
				return err
			}
			if !resp.HasDeadline {
				return errors.New("the handler saw no deadline, with one of 60s")
			}
			if resp.RemainingMs <= 0 || resp.RemainingMs > 60_000 {
				return fmt.Errorf("the handler saw %dms left of 60s", resp.RemainingMs)
			}
			short, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			resp, err = c.Deadline(short, &shopv1.DeadlineRequest{})
			if err != nil {
				return err
			}
			if !resp.HasDeadline || resp.RemainingMs > 5000 || resp.RemainingMs < 1000 {
				return fmt.Errorf("with 5s: the handler saw %v", resp)
			}
			return nil
		}},
		{"catalog.Deadline: a deadline that passes ends the handler's context", func(ctx context.Context, s *erpc.Session) error {
			c := shopv1.NewCatalogERPCClient(s)
			short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.Deadline(short, &shopv1.DeadlineRequest{WaitMs: 30_000})
			if err := wantCode(err, erpc.DeadlineExceeded, ""); err != nil {
				return err
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("errors.Is(%v, context.DeadlineExceeded) is false", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				return fmt.Errorf("the call took %v with a deadline of 100ms", d)
			}
			select {
			case herr := <-theCatalog.handlerErr:
				if herr == nil {
					return errors.New("the handler waited 30s: its context did not end")
				}
			case <-time.After(20 * time.Second):
				return errors.New("the handler's context did not end within 20s of a 100ms deadline")
			}
			return nil
		}},
		{"catalog.Discontinued: Unimplemented names the method", func(ctx context.Context, s *erpc.Session) error {
			_, err := shopv1.NewCatalogERPCClient(s).Discontinued(ctx, &shopv1.Item_Ref{Sku: "tea"})
			if err := wantCode(err, erpc.Unimplemented, "/erpctest.shop.v1.Catalog/Discontinued"); err != nil {
				return err
			}
			if !errors.Is(err, erpc.ErrUnimplemented) {
				return fmt.Errorf("errors.Is(%v, erpc.ErrUnimplemented) is false", err)
			}
			return nil
		}},
		{"cart: imported request and response types", func(ctx context.Context, s *erpc.Session) error {
			c := shopv1.NewCartERPCClient(s)
			for i, want := range []*commonv1.Money{
				{Currency: "EUR", Units: 9, Nanos: proto.Int32(0)},
				{Currency: "EUR", Units: 16, Nanos: proto.Int32(0)},
			} {
				sku := []string{"tea", "cup"}[i]
				resp, err := c.Add(ctx, &shopv1.AddRequest{Ref: &shopv1.Item_Ref{Sku: sku}, Quantity: 2 - int32(i)})
				if err != nil {
					return err
				}
				if resp.Lines != int32(i+1) || !proto.Equal(resp.Total, want) {
					return fmt.Errorf("add %s: %v, want %d lines and %v", sku, resp, i+1, want)
				}
			}
			total, err := c.Total(ctx, &commonv1.Empty{})
			if err != nil {
				return err
			}
			if total.Units != 16 || total.Currency != "EUR" {
				return fmt.Errorf("total %v", total)
			}
			return nil
		}},
		{"mixed: the unary methods of a service with streaming ones", func(ctx context.Context, s *erpc.Session) error {
			c := streamv1.NewMixedERPCClient(s)
			got, err := c.Unary(ctx, &streamv1.Chunk{Data: []byte("hi")})
			if err != nil {
				return err
			}
			if string(got.Data) != "echo:hi" {
				return fmt.Errorf("Unary: %q", got.Data)
			}
			got, err = c.Old(ctx, &streamv1.Chunk{})
			if err != nil {
				return err
			}
			if string(got.Data) != "old" {
				return fmt.Errorf("Old: %q", got.Data)
			}
			return nil
		}},
		{"legacy: proto2 required and default", func(ctx context.Context, s *erpc.Session) error {
			c := legacyv1.NewLegacyERPCClient(s)
			got, err := c.Get(ctx, &legacyv1.GetRequest{Key: proto.String("known")})
			if err != nil {
				return err
			}
			if got.GetValue() != "value" {
				return fmt.Errorf("known: %v", got)
			}
			got, err = c.Get(ctx, &legacyv1.GetRequest{Key: proto.String("other")})
			if err != nil {
				return err
			}
			if got.Value != nil || got.GetValue() != "none" {
				return fmt.Errorf("other: %v", got)
			}
			// A request without its required field does not encode.
			_, err = c.Get(ctx, &legacyv1.GetRequest{})
			return wantCode(err, erpc.InvalidArgument, "")
		}},
		{"collision: two services whose methods hash alike", func(context.Context, *erpc.Session) error {
			srv := erpc.NewServer()
			if err := shopv1.RegisterCatalogERPCServer(srv, newCatalog()); err != nil {
				return err
			}
			err := collidev1.RegisterRivalERPCServer(srv, collidev1.UnimplementedRivalERPCServer{})
			if err := wantCode(err, erpc.AlreadyExists, ""); err != nil {
				return err
			}
			for _, name := range []string{shopv1.CatalogERPC_GetItem_FullMethodName, collidev1.RivalERPC_GetHqOMKJ_FullMethodName} {
				if !strings.Contains(err.Error(), name) {
					return fmt.Errorf("the error does not name %s: %v", name, err)
				}
			}
			// The other order, and a raw handler in the way.
			srv = erpc.NewServer()
			if err := srv.Handle(collidev1.RivalERPC_GetHqOMKJ_FullMethodName, func(_ context.Context, b []byte) ([]byte, error) { return b, nil }); err != nil {
				return err
			}
			err = shopv1.RegisterCatalogERPCServer(srv, newCatalog())
			return wantCode(err, erpc.AlreadyExists, "same ID")
		}},
		{"register: twice, after Listen, nil", func(context.Context, *erpc.Session) error {
			srv := erpc.NewServer()
			if err := shopv1.RegisterCartERPCServer(srv, &cart{}); err != nil {
				return err
			}
			if err := wantCode(shopv1.RegisterCartERPCServer(srv, &cart{}), erpc.AlreadyExists, "registered twice"); err != nil {
				return err
			}
			if err := wantCode(shopv1.RegisterCatalogERPCServer(srv, nil), erpc.InvalidArgument, "nil implementation"); err != nil {
				return err
			}
			ep, err := srv.Listen("mem://erpc-e2e-late")
			if err != nil {
				return err
			}
			defer ep.Close()
			return wantCode(shopv1.RegisterCatalogERPCServer(srv, newCatalog()), erpc.FailedPrecondition, "")
		}},
	}
}

// wantCode checks that err is an *erpc.Error with code and a message that
// contains msg.
func wantCode(err error, code erpc.Code, msg string) error {
	var e *erpc.Error
	switch {
	case err == nil:
		return fmt.Errorf("no error, want %v", code)
	case !errors.As(err, &e) || e.Code != code:
		return fmt.Errorf("error %v, want code %v", err, code)
	case !strings.Contains(e.Error(), msg):
		return fmt.Errorf("error %v, want one that says %q", err, msg)
	}
	return nil
}
