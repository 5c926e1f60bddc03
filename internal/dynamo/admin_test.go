package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

func TestAdminUsersPagesInIDOrder(t *testing.T) {
	env := dynamotest.New(t)
	admin := dynamo.NewAdmin(env.Client, env.Table, dynamo.WithPageSize(2))
	ctx := context.Background()
	ids := []string{"u-05", "u-01", "u-07", "u-03", "u-02", "u-06", "u-04"}
	for _, id := range ids {
		if _, err := admin.AddUser(ctx, identity.User{ExternalID: id, Tenant: "tenant-x", Active: true, Functions: []string{ticket.GetName}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"u-00", "u-99"} {
		if _, err := admin.AddUser(ctx, identity.User{ExternalID: id, Tenant: "tenant-y", Active: true, Functions: []string{ticket.GetName}}); err != nil {
			t.Fatal(err)
		}
	}
	env.Requests.Reset()
	var got []string
	after, pages := "", 0
	for {
		page, err := admin.Users(ctx, "tenant-x", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, u := range page.Users {
			got = append(got, u.ExternalID)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
		if pages > 5 {
			t.Fatal("no end")
		}
	}
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", got, pages, want)
	}
	ops := env.Requests.Operations()
	if ops["Scan"] != 0 || ops["Query"] < 4 || ops["BatchGetItem"] != 3 {
		t.Errorf("requests %v: want several Query pages of 2, one BatchGetItem per page, no Scan", ops)
	}
	all, err := admin.Users(ctx, "tenant-x", "", dynamo.MaxListUsers)
	if err != nil || len(all.Users) != len(ids) || all.Next != "" {
		t.Errorf("one big page: %d users, next %q, %v", len(all.Users), all.Next, err)
	}
	if _, err := admin.Users(ctx, "tenant-x", "", dynamo.MaxListUsers+1); err == nil {
		t.Error("a limit over MaxListUsers was accepted")
	}
	none, err := admin.Users(ctx, "tenant-none", "", 10)
	if err != nil || len(none.Users) != 0 || none.Next != "" {
		t.Errorf("unknown tenant: %+v, %v", none, err)
	}
}

func TestAdminUpdateUserChangesOneField(t *testing.T) {
	env := dynamotest.New(t)
	admin := dynamo.NewAdmin(env.Client, env.Table)
	ctx := context.Background()
	erin := identity.User{ExternalID: "user-e", Tenant: "tenant-a", Name: "erin", Active: true, Functions: []string{ticket.GetName}}
	if _, err := admin.AddUser(ctx, erin); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddUser(ctx, erin); !errors.Is(err, dynamo.ErrUserExists) {
		t.Fatalf("second AddUser = %v, want ErrUserExists", err)
	}
	read, err := admin.User(ctx, "user-e")
	if err != nil || read.Version != 0 {
		t.Fatalf("User = %+v, %v", read, err)
	}
	to := read.User
	to.Active = false
	disabled, err := admin.UpdateUser(ctx, read, to)
	if err != nil || disabled.Version != 1 || disabled.Active {
		t.Fatalf("disable = %+v, %v", disabled, err)
	}
	again, err := admin.User(ctx, "user-e")
	if err != nil || again.Version != 1 || again.Active || again.Name != "erin" || !slices.Equal(again.Functions, []string{ticket.GetName}) {
		t.Fatalf("after disable: %+v, %v; want only active changed", again, err)
	}
	// A change conditional on the record first read is refused now.
	to = read.User
	to.Name = "erin b"
	_, err = admin.UpdateUser(ctx, read, to)
	var ce *dynamo.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, dynamo.ErrConflict) || ce.Current == nil || ce.Current.Version != 1 {
		t.Fatalf("stale change = %v, want a ConflictError with the current record", err)
	}
	if now, _ := admin.User(ctx, "user-e"); now.Name != "erin" || now.Version != 1 {
		t.Errorf("the refused change wrote: %+v", now)
	}
	// Nothing to change writes nothing.
	same, err := admin.UpdateUser(ctx, again, again.User)
	if err != nil || same.Version != 1 {
		t.Errorf("no-op change = %+v, %v", same, err)
	}
	to = again.User
	to.Functions = nil
	if _, err := admin.UpdateUser(ctx, again, to); !errors.Is(err, dynamo.ErrNoFunctions) {
		t.Errorf("emptying the functions = %v", err)
	}
	env.DeleteItem(t, "user#user-e")
	to = again.User
	to.Active = true
	if _, err := admin.UpdateUser(ctx, again, to); !errors.Is(err, identity.ErrUnknown) {
		t.Errorf("change of a deleted user = %v, want identity.ErrUnknown", err)
	}
	if n := env.Count(t, "user"); n != 0 {
		t.Errorf("the refused change recreated the user (%d users)", n)
	}
}

func TestAdminFind(t *testing.T) {
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	admin := dynamo.NewAdmin(env.Client, env.Table, dynamo.WithPageSize(1))
	ctx := context.Background()
	bob := identity.User{ExternalID: "user-b", Tenant: "tenant-a", Active: true, Functions: []string{ticket.CreateName}}
	carol := identity.User{ExternalID: "user-c", Tenant: "tenant-b", Active: true, Functions: []string{ticket.CreateName}}
	for _, u := range []identity.User{bob, carol} {
		if err := store.PutUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	second := created(t, store, bob, "k2", "req-1", at.Add(time.Second))
	first := created(t, store, bob, "k1", "req-1", at)
	created(t, store, carol, "k3", "req-1", at) // same request id, other tenant
	created(t, store, bob, "k4", "req-2", at)

	m, err := admin.FindRequest(ctx, "tenant-a", "req-1", "")
	if err != nil || m.Truncated || len(m.Found) != 2 {
		t.Fatalf("FindRequest = %+v, %v", m, err)
	}
	if m.Found[0].Ticket.ID != first.ID || m.Found[1].Ticket.ID != second.ID {
		t.Errorf("found %s, %s; want oldest first %s, %s", m.Found[0].Ticket.ID, m.Found[1].Ticket.ID, first.ID, second.ID)
	}
	if op := m.Found[0].Operation; op == nil || op.Key != "k1" || op.State != idempotency.Completed {
		t.Errorf("operation of the first = %+v", op)
	}
	if m, _ := admin.FindRequest(ctx, "tenant-a", "req-1", ticket.GetName); len(m.Found) != 0 {
		t.Errorf("a function filter of get_ticket found %d", len(m.Found))
	}
	if m, _ := admin.FindRequest(ctx, "tenant-a", "req-none", ""); len(m.Found) != 0 {
		t.Errorf("an unknown request found %d", len(m.Found))
	}

	f, err := admin.FindTicket(ctx, first.ID)
	if err != nil || f == nil || f.Operation == nil || f.Operation.Key != "k1" {
		t.Fatalf("FindTicket = %+v, %v", f, err)
	}
	f, err = admin.FindOperation(ctx, "k2")
	if err != nil || f == nil || f.Ticket == nil || f.Ticket.ID != second.ID {
		t.Fatalf("FindOperation = %+v, %v", f, err)
	}
	if f, err := admin.FindTicket(ctx, ticket.NewID()); f != nil || err != nil {
		t.Errorf("FindTicket of an unknown id = %+v, %v", f, err)
	}
	// The operation item is gone after its window; the ticket still shows.
	env.DeleteItem(t, "op#k1")
	f, err = admin.FindTicket(ctx, first.ID)
	if err != nil || f == nil || f.Operation != nil {
		t.Errorf("FindTicket after the operation expired = %+v, %v", f, err)
	}
	if f, err := admin.FindOperation(ctx, "k1"); f != nil || err != nil {
		t.Errorf("FindOperation of a deleted operation = %+v, %v", f, err)
	}
}
