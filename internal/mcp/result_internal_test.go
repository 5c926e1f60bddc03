package mcp

import (
	"encoding/json"
	"net/http"
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
		res := toResult(json.RawMessage("3"), c.ans)
		var body struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Type, Text string }
				IsError bool
				// StructuredContent must be absent: the outputSchema
				// describes successes only.
				StructuredContent json.RawMessage
			}
		}
		if err := json.Unmarshal(res.Body, &body); err != nil || res.Status != http.StatusOK || body.ID != 3 {
			t.Fatalf("%s: %d %s", c.says, res.Status, res.Body)
		}
		r := body.Result
		if !r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" || !strings.HasPrefix(r.Content[0].Text, c.says) || r.StructuredContent != nil {
			t.Errorf("%s: %s", c.says, res.Body)
		}
	}
}
