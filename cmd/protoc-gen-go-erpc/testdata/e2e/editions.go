//go:build editions

package main

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	commonv1 "example.com/erpctest/gen/common/v1"
	inventoryv1 "example.com/erpctest/gen/inventory/v1"
	"github.com/erpc-go/erpc"
)

// The service declared in edition 2023 (built with -tags editions, when
// the compiler could read that file).

type inventory struct {
	inventoryv1.UnimplementedInventoryERPCServer
}

func (inventory) Stock(_ context.Context, req *inventoryv1.StockRequest) (*inventoryv1.StockResponse, error) {
	resp := &inventoryv1.StockResponse{
		Sku:       req.Sku,
		OnHand:    12,
		Value:     &commonv1.Money{Currency: "EUR", Units: 54},
		Locations: []*inventoryv1.StockResponse_Location{{Shelf: "A1", Count: 10}, {Shelf: "B2", Count: 2}},
	}
	if req.Min != nil && resp.OnHand < *req.Min { // explicit presence
		return nil, erpc.Errorf(erpc.FailedPrecondition, "%d on hand, fewer than %d", resp.OnHand, *req.Min)
	}
	return resp, nil
}

func init() {
	registrations = append(registrations, func(srv *erpc.Server) error {
		return inventoryv1.RegisterInventoryERPCServer(srv, inventory{})
	})
	checks = append(checks, check{"inventory: a service in edition 2023", func(ctx context.Context, s *erpc.Session) error {
		c := inventoryv1.NewInventoryERPCClient(s)
		got, err := c.Stock(ctx, &inventoryv1.StockRequest{Sku: "tea"})
		if err != nil {
			return err
		}
		if got.Sku != "tea" || got.OnHand != 12 || got.Value.GetUnits() != 54 || len(got.Locations) != 2 || got.Locations[1].Shelf != "B2" {
			return fmt.Errorf("stock: %v", got)
		}
		_, err = c.Stock(ctx, &inventoryv1.StockRequest{Sku: "tea", Min: proto.Int32(20)})
		return wantCode(err, erpc.FailedPrecondition, "fewer than 20")
	}})
}
