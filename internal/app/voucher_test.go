package app_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestTheWorkerAsksTheUsersRecord: the worker the functions are wired
// with asks the store, before every attempt sends, whether the ticket's
// user record still vouches for it: what makes a late create inert.
func TestTheWorkerAsksTheUsersRecord(t *testing.T) {
	store := dynamo.New(nil, "table")
	cfg := config.Config{Delivery: config.Delivery{Destination: config.DestinationWebhook, URL: "https://helpdesk.example/hook", Token: "t"}}
	w, err := app.Worker(cfg, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := w.Voucher.(*dynamo.Store); !ok || v != store {
		t.Fatalf("the wired worker's Voucher is %T, want the store", w.Voucher)
	}
}
