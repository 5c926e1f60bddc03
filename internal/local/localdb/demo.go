package localdb

import (
	"context"

	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/ticket"
)

// DemoHookKey is the hook key of local runs. It is public: never use it for
// a deployment (configuration refuses it outside a local run).
const DemoHookKey = nonce.DemoKey

var allFunctions = []string{ticket.CreateName, ticket.GetName}

// DemoUsers are the users local runs seed.
var DemoUsers = []identity.User{
	{ExternalID: "user-a", Tenant: "tenant-a", Name: "alice", Active: true, Functions: allFunctions},
	{ExternalID: "user-b", Tenant: "tenant-a", Name: "bob", Active: true, Functions: allFunctions},
	{ExternalID: "user-c", Tenant: "tenant-b", Name: "carol", Active: true, Functions: allFunctions},
	{ExternalID: "user-d", Tenant: "tenant-a", Name: "dave", Active: false, Functions: allFunctions},
	{ExternalID: "user-e", Tenant: "tenant-a", Name: "erin", Active: true, Functions: []string{ticket.GetName}},
}

// UserAdder adds a user unless one with the same id exists.
type UserAdder interface {
	AddUser(ctx context.Context, u identity.User) (bool, error)
}

// SeedDemo adds the demo users that are missing and returns how many it added.
func SeedDemo(ctx context.Context, s UserAdder) (int, error) {
	added := 0
	for _, u := range DemoUsers {
		ok, err := s.AddUser(ctx, u)
		if err != nil {
			return added, err
		}
		if ok {
			added++
		}
	}
	return added, nil
}
