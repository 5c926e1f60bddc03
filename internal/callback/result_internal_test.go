package callback

import (
	"bytes"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestAnswerBodyOfACreatedResult: a replay's body, built from the stored
// result, reads byte for byte like the first answer's.
func TestAnswerBodyOfACreatedResult(t *testing.T) {
	for _, id := range []string{ticket.NewID(), ticket.NewID(), `odd "id" \ with escapes` + "\n"} {
		want, err := canonjson.Marshal(map[string]any{"status": protocol.StatusCreated, "ticket_id": id})
		if err != nil {
			t.Fatal(err)
		}
		body, err := answerBody(want, nil, time.Time{}, true)
		if err != nil || !bytes.Equal(body, withFlag(ticket.Created(id), true)) {
			t.Errorf("answerBody = %s, %v", body, err)
		}
	}
	if _, err := answerBody([]byte(`{"status":`), nil, time.Time{}, true); err == nil {
		t.Error("answerBody accepted a stored result that is not JSON")
	}
}
