package callback

import (
	"bytes"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestCreatedResultIsCanonical checks the hand-built stored result against
// the general RFC 8785 encoder, so that a replay reads byte for byte like
// the first answer.
func TestCreatedResultIsCanonical(t *testing.T) {
	for _, id := range []string{ticket.NewID(), ticket.NewID(), `odd "id" \ with escapes` + "\n"} {
		want, err := canonjson.Marshal(map[string]any{"status": protocol.StatusCreated, "ticket_id": id})
		if err != nil {
			t.Fatal(err)
		}
		if got := createdResult(id); !bytes.Equal(got, want) {
			t.Errorf("createdResult(%q) = %s, want %s", id, got, want)
		}
		body, err := answerBody(want, nil, time.Time{}, true)
		if err != nil || !bytes.Equal(body, withFlag(createdResult(id), true)) {
			t.Errorf("answerBody = %s, %v", body, err)
		}
	}
	if _, err := answerBody([]byte(`{"status":`), nil, time.Time{}, true); err == nil {
		t.Error("answerBody accepted a stored result that is not JSON")
	}
}
