package callback

import (
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// ResultSchema returns the JSON Schema of what function name answers when
// it did what was asked (a created, replayed or found ticket), nil for a
// function it does not serve. Refusals are not described: they are not
// results. The schemas sit beside the code that builds those answers, and
// the tests check every answer against them.
func (h *Handler) ResultSchema(name string) map[string]any {
	switch name {
	case ticket.CreateName:
		props := map[string]any{
			"status":       map[string]any{"type": "string", "enum": []string{protocol.StatusCreated}},
			"ticket_id":    map[string]any{"type": "string", "description": "The ticket's id; get_ticket takes it."},
			"deduplicated": map[string]any{"type": "boolean", "description": "true when this request_id had already created the ticket: nothing new was created."},
		}
		if h.Outbox != nil {
			// A ticket made before the destination was configured has none.
			props["delivery"] = deliverySchema()
		}
		return object(props, []string{"status", "ticket_id", "deduplicated"})
	case ticket.GetName:
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
	}
	return nil
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
