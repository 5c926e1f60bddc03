package dynamo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestCreateAttributesCoverTheCreate: every attribute a create's Puts name
// (items and expressions, a ticket with every field, a result and a queued
// delivery) is one of dynamo.CreateAttributes, which the callback's role
// is limited to; and those never include the audit or what only a
// decision or an attempt records.
func TestCreateAttributesCoverTheCreate(t *testing.T) {
	f := newFixture(t, nil)
	allowed := dynamo.CreateAttributes()
	rec := idempotency.Record{Key: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", UserID: "user-a", Tenant: "tenant-a",
		Function: ticket.CreateName, State: idempotency.Completed, Fingerprint: "fp", Result: []byte(`{"ok":true}`), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	id := ticket.NewID()
	rec.TicketID = id
	tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "t", Description: "d", Priority: "high", Tags: []string{"x"},
		RequestID: "req-1", OperationKey: rec.Key, CreatedAt: t0}
	out := &delivery.Record{State: delivery.Queued, Destination: "webhook", Key: delivery.Key(rec.Key, id), Since: t0, NextAt: t0, Version: 1}
	puts := 0
	for _, it := range f.store.CreateInput(rec, tk, out, t0).TransactItems {
		if it.Put == nil {
			continue
		}
		puts++
		var named []string
		for n := range it.Put.Item {
			named = append(named, n)
		}
		for _, n := range it.Put.ExpressionAttributeNames {
			named = append(named, n)
		}
		for _, n := range named {
			if !slices.Contains(allowed, n) {
				t.Errorf("a create's Put names %q, which dynamo.CreateAttributes (the callback's dynamodb:Attributes) lacks", n)
			}
		}
	}
	if puts != 2 {
		t.Fatalf("%d Puts, want the operation and the ticket", puts)
	}
	for _, never := range []string{"audit", "dest_id", "dest_url", "delivered_at", "lease_owner", "lease_until", "reason", "maybe_sent"} {
		if slices.Contains(allowed, never) {
			t.Errorf("dynamo.CreateAttributes lets the callback write %q", never)
		}
	}
}
