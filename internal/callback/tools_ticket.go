package callback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Tools are the tools oncecall serves, in the order they are listed.
var Tools = []*Tool{CreateTicket, GetTicket}

// CreateTicket is create_ticket: the claim and the ticket in one
// transaction (call.create), the ticket delivered to the destination.
var CreateTicket = &Tool{
	Function: ticket.Create,
	// Idempotent under a request_id: a repeat returns the same ticket.
	Hints: Hints{Idempotent: true, Delivers: true},
	Instructions: ticket.CreateName + " creates one helpdesk ticket per operation: " +
		"the application must put the operation's request_id in params._meta.request_id and keep it across retries; " +
		"a retry with the same request_id returns the same ticket with deduplicated true.",
	Result: func(withDelivery bool) map[string]any {
		props := map[string]any{
			"status":       map[string]any{"type": "string", "enum": []string{protocol.StatusCreated}},
			"ticket_id":    map[string]any{"type": "string", "description": "The ticket's id; get_ticket takes it."},
			"deduplicated": map[string]any{"type": "boolean", "description": "true when this request_id had already created the ticket: nothing new was created."},
		}
		if withDelivery {
			// A ticket made before the destination was configured has none.
			props["delivery"] = deliverySchema()
		}
		return object(props, []string{"status", "ticket_id", "deduplicated"})
	},
	run: (*call).create,
}

// GetTicket is get_ticket: a ticket of the caller's tenant, with its
// delivery (call.get).
var GetTicket = &Tool{
	Function:     ticket.Get,
	Hints:        Hints{ReadOnly: true},
	Instructions: ticket.GetName + " reads a ticket by the ticket_id " + ticket.CreateName + " returned.",
	Result: func(bool) map[string]any {
		view := object(map[string]any{
			"ticket_id":   map[string]any{"type": "string"},
			"title":       map[string]any{"type": "string"},
			"description": map[string]any{"type": "string"},
			"priority":    map[string]any{"type": "string", "enum": ticket.Priorities},
			"tags":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"created_at":  map[string]any{"type": "string", "format": "date-time"},
			"delivery":    deliverySchema(),
		}, []string{"ticket_id", "title", "priority", "created_at"})
		return object(map[string]any{
			"status": map[string]any{"type": "string", "enum": []string{protocol.StatusFound}},
			"ticket": view,
		}, []string{"status", "ticket"})
	},
	run: (*call).get,
}

// deliverySchema describes delivery.View.
func deliverySchema() map[string]any {
	return object(map[string]any{
		"state": map[string]any{"type": "string", "enum": []string{
			string(delivery.Queued), string(delivery.InProgress), string(delivery.Delivered),
			string(delivery.Failed), string(delivery.Uncertain), string(delivery.Abandoned)}},
		"helpdesk_id": map[string]any{"type": "string"},
		"url":         map[string]any{"type": "string"},
		"message":     map[string]any{"type": "string", "description": "What the delivery state means for the next step."},
	}, []string{"state", "message"})
}

func object(props map[string]any, required []string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// create serves create_ticket: the operation's key, then its claim and
// ticket in one transaction, or the answer of the operation that holds
// the key already.
func (c *call) create(ctx context.Context) protocol.Answer {
	rid := c.in.RequestID
	if err := protocol.CheckRequestID(rid, c.door.RequestID); err != nil {
		return c.refuse(err)
	}
	pol := c.h.Policies.For(c.tool.Name())
	c.h.debug(ctx, "key policy", slog.String("function", c.tool.Name()), slog.String("policy", string(pol)))
	key, err := idempotency.Derive(pol, idempotency.Operation{
		Tenant:    c.user.Tenant,
		RequestID: rid,
		Function:  c.tool.Name(),
		Arguments: c.args,
	})
	if err != nil {
		return c.fail(err)
	}
	if len(key.Arguments) > protocol.MaxArgumentsBytes {
		return c.reject(protocol.CodeTooLarge, fmt.Sprintf("The arguments are %d bytes; the limit is %d. Shorten the description.", len(key.Arguments), protocol.MaxArgumentsBytes))
	}
	c.log.opKey = key.ID

	now := c.h.Now().UTC()
	t := ticket.FromArguments(c.args)
	t.Tenant = c.user.Tenant
	t.UserID = c.user.ExternalID
	t.CreatedAt = now
	t.Function = c.tool.Name()
	t.OperationKey = key.ID
	t.RequestID = rid
	t.UserVersion = c.user.Version
	// The first ticket of a request id takes the id the outcome read finds
	// from the user and the request id; a later one finds it taken (no
	// write) and takes a random id.
	first := ""
	if rid != "" {
		if first, err = c.h.Store.FirstTicketID(ctx, c.user.ExternalID, rid); err != nil {
			return c.fail(err)
		}
	}
	t.ID = first
	if t.ID == "" {
		t.ID = c.h.NewID()
	}
	var (
		rec    idempotency.Record
		out    *delivery.Record
		holder idempotency.Record
		taken  bool
	)
	for retried := false; ; retried = true {
		rec = idempotency.Record{
			Key:         key.ID,
			UserID:      c.user.ExternalID,
			Tenant:      c.user.Tenant,
			Function:    c.tool.Name(),
			State:       idempotency.Completed,
			Fingerprint: key.Fingerprint,
			TicketID:    t.ID,
			Result:      ticket.Created(t.ID),
			CreatedAt:   now,
			ExpiresAt:   now.Add(c.h.keep()),
			UserVersion: c.user.Version,
		}
		out = c.h.queued(key.ID, t.ID, now)
		holder, taken, err = c.h.Store.Create(ctx, rec, t, out)
		if !errors.Is(err, ticket.ErrExists) || first == "" || retried {
			break
		}
		t.ID = c.h.NewID()
	}
	switch {
	case err != nil:
		return c.fail(err)
	case taken:
		return c.replay(ctx, holder, key)
	}
	c.log.outcome = protocol.StatusCreated
	if out != nil {
		if d := c.h.Outbox.Committed(ctx, t.ID); d != nil {
			out = d
		}
	}
	return protocol.Done(protocol.StatusCreated, c.result(rec.Result, out, false))
}

type found struct {
	Status string     `json:"status"`
	Ticket ticketView `json:"ticket"`
}

// ticketView is what get_ticket discloses: the ticket and, when it has
// one, its delivery.
type ticketView struct {
	ticket.View
	Delivery *delivery.View `json:"delivery,omitempty"`
}

// get serves get_ticket: a ticket of the caller's tenant, with its
// delivery.
func (c *call) get(ctx context.Context) protocol.Answer {
	id, _ := c.args["ticket_id"].(string)
	t, d, err := c.h.Store.ReadTicket(ctx, id)
	if err != nil {
		return c.fail(err)
	}
	if ans, late := c.late(ctx); late {
		return ans
	}
	// Another tenant's ticket, and one its maker's record no longer
	// vouches for, are indistinguishable from a missing one.
	if t != nil && t.Tenant == c.user.Tenant {
		if t, err = c.vouched(ctx, t); err != nil {
			return c.fail(err)
		}
	}
	if t == nil || t.Tenant != c.user.Tenant {
		c.log.outcome, c.log.code = protocol.StatusNotFound, "ticket_not_found"
		return protocol.NotFound("ticket_not_found", "No ticket "+id+" is visible to this user. Check the ticket_id that create_ticket returned.")
	}
	c.log.outcome = protocol.StatusFound
	v := ticketView{View: t.View()}
	if d != nil {
		dv := d.View(c.h.Now())
		v.Delivery = &dv
	}
	return protocol.Value(protocol.StatusFound, found{Status: protocol.StatusFound, Ticket: v})
}
