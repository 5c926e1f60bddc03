package callback

import (
	"context"

	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/schema"
)

// Tool is one function oncecall serves, as one value: its name,
// description and arguments (Function: defaults, normalization and
// limits), the schema of its answer, its MCP hints, and what it does.
// Everything around it is the Handler's and the same for every tool: the
// doors, the nonce, the user's record and grant (a user is granted a tool
// by its Function's name), the operation key, the claim, replay,
// refusals, the log line and the metrics.
type Tool struct {
	Function *schema.Function
	Hints    Hints
	// Instructions tell an MCP host how to use the tool (initialize's
	// and server/discover's instructions join every tool's).
	Instructions string
	// Result returns the JSON Schema of what the tool answers when it did
	// what was asked; delivery says the deployment has a destination.
	// Refusals are not described: they are not results.
	Result func(delivery bool) map[string]any
	// run serves a call whose user may make it, with its arguments
	// validated and normalized (c.args), within the store's deadline.
	run func(c *call, ctx context.Context) protocol.Answer
}

// Hints are a tool's MCP annotations.
type Hints struct {
	// ReadOnly: the tool changes nothing.
	ReadOnly bool
	// Idempotent: a repeat of the same operation changes nothing more.
	Idempotent bool
	// Destructive: the tool may change or remove what exists.
	Destructive bool
	// Delivers: what the tool makes goes on to the deployment's
	// destination, so the tool reaches the world outside oncecall when
	// the deployment has one (MCP's openWorldHint).
	Delivers bool
}

// Name is the tool's name, its Function's.
func (t *Tool) Name() string { return t.Function.Name }
