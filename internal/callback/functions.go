package callback

import (
	"context"

	"github.com/oncecall/oncecall/internal/protocol"
)

// Definition is one function as an AIVAX function source lists it.
type Definition struct {
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	CallbackURL   string         `json:"callbackUrl"`
	ContentFormat map[string]any `json:"contentFormat"`
}

// Listing is the body of GET /functions: the protocolFunctionSources format.
type Listing struct {
	Functions []Definition `json:"functions"`
}

// Listing returns the function-source listing, with callbackURL as every
// function's callback. It is generated from the same definitions that
// validate arguments.
func (h *Handler) Listing(callbackURL string) Listing {
	l := Listing{Functions: make([]Definition, len(h.Tools))}
	for i, t := range h.Tools {
		f := t.Function
		l.Functions[i] = Definition{Name: f.Name, Description: f.Description, CallbackURL: callbackURL, ContentFormat: f.JSONSchema()}
	}
	return l
}

// List serves GET /functions. AIVAX sends X-Request-Nonce with it too, and
// it is authenticated like a callback.
func (h *Handler) List(ctx context.Context, nonceHeader, callbackURL string) protocol.Answer {
	c := h.begin(CallbackDoor)
	c.msg = "functions"
	c.in.Nonce = nonceHeader
	ans, ok := c.authenticate()
	if ok {
		c.log.outcome = OutcomeListed
		ans = protocol.Value(OutcomeListed, h.Listing(callbackURL))
	}
	c.finish(ctx, ans)
	return ans
}
