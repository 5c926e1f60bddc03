package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/protocol"
)

// TestRetryableAnswersAreToolErrors: in_progress, busy and the internal
// error, which the store decides and the public tests cannot provoke on
// demand, reach the model as isError results that say to retry.
func TestRetryableAnswersAreToolErrors(t *testing.T) {
	cases := []struct {
		ans  protocol.Answer
		says string
	}{
		{protocol.InProgress(), "in_progress: This operation is already in progress."},
		{protocol.Busy(), "busy: The ticket store is busy. Retry this same call shortly"},
		{protocol.Internal(), "internal: Internal error. Nothing was left half written; retrying the same call is safe."},
		{protocol.NotFound("ticket_not_found", "No ticket x."), "ticket_not_found: No ticket x."},
	}
	for _, c := range cases {
		res, err := toResult(c.ans)
		if err != nil {
			t.Fatalf("%s: %v", c.says, err)
		}
		raw, _ := json.Marshal(res)
		var r struct {
			Content []struct{ Type, Text string }
			IsError bool
			// StructuredContent must be absent: the outputSchema
			// describes successes only.
			StructuredContent json.RawMessage
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if !r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" || !strings.HasPrefix(r.Content[0].Text, c.says) || r.StructuredContent != nil {
			t.Errorf("%s: %s", c.says, raw)
		}
	}
}
