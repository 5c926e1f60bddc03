package callback_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/ticket"
)

// memory is a callback.Store in memory, enough for an example: the real
// one is package dynamo's, one DynamoDB transaction per create.
type memory struct {
	mu      sync.Mutex
	users   map[string]identity.User
	ops     map[string]idempotency.Record
	tickets map[string]ticket.Ticket
}

func (m *memory) LoadUser(_ context.Context, id string) (identity.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return identity.User{}, identity.ErrUnknown
	}
	return u, nil
}

func (m *memory) Create(_ context.Context, rec idempotency.Record, t ticket.Ticket, _ *delivery.Record) (idempotency.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if held, ok := m.ops[rec.Key]; ok {
		return held, true, nil
	}
	m.ops[rec.Key], m.tickets[t.ID] = rec, t
	return idempotency.Record{}, false, nil
}

func (m *memory) ReadTicket(_ context.Context, id string) (*ticket.Ticket, *delivery.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tickets[id]
	if !ok {
		return nil, nil, nil
	}
	return &t, nil, nil
}

func (m *memory) Delivery(context.Context, string) (*delivery.Record, error) { return nil, nil }

// exampleIDKey stands for the id key the real store keeps in its table.
var exampleIDKey = []byte("an example id key of 32 bytes...")

func (m *memory) FirstTicketID(_ context.Context, userID, requestID string) (string, error) {
	return ticket.IDFor(exampleIDKey, userID, requestID), nil
}

// The same callback sent twice, as an agent loop does after a timeout,
// creates one ticket: the second call gets the first one's answer, marked
// deduplicated. A call through another door (MCP's tools/call, decoded
// into a Call) goes through Handler.Serve, the same steps.
func ExampleHandler_Call() {
	const hookKey = "example-hook-key-0123456789abcdef"
	verifier, err := nonce.NewVerifier(nonce.DefaultMaxCost, hookKey)
	if err != nil {
		fmt.Println(err)
		return
	}
	store := &memory{
		users: map[string]identity.User{"user-a": {
			ExternalID: "user-a",
			Tenant:     "tenant-a",
			Active:     true,
			Functions:  []string{ticket.CreateName, ticket.GetName},
		}},
		ops:     map[string]idempotency.Record{},
		tickets: map[string]ticket.Ticket{},
	}
	h := callback.NewHandler(verifier, store, nil)

	body := []byte(`{
		"type": "tool_call",
		"function": {"name": "create_ticket", "content": {"title": "Cannot sign in"}},
		"context": {"externalUserId": "user-a", "metadata": {"request_id": "op-7"}}
	}`)
	for range 2 {
		hash, _ := nonce.Generate(hookKey, nonce.MinCost) // AIVAX sends a fresh one each time
		ans := h.Call(context.Background(), callback.Request{Nonce: hash, Body: body})
		fmt.Println(ans.Status, string(ans.Body()))
	}
	fmt.Println(len(store.tickets), "ticket")

	ans := h.Call(context.Background(), callback.Request{Nonce: "", Body: body})
	fmt.Println(ans.Status, string(ans.Body()))
	// Output:
	// 200 {"status":"created","ticket_id":"bab3c27b-60cb-40e3-88a9-86d9f58daed6","deduplicated":false}
	// 200 {"status":"created","ticket_id":"bab3c27b-60cb-40e3-88a9-86d9f58daed6","deduplicated":true}
	// 1 ticket
	// 401 {"status":"unauthorized","error":{"code":"missing_nonce","message":"The X-Request-Nonce header is required: set a hook key on the AIVAX account."}}
}
