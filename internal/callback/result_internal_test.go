package callback

import (
	"bytes"
	"testing"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestACreatedResultIsCanonical: a created answer and its replay, built
// from the stored result, read as the general RFC 8785 encoder writes
// them apart from the flag, so that a replay reads byte for byte like the
// first answer.
func TestACreatedResultIsCanonical(t *testing.T) {
	c := &call{h: &Handler{}}
	for _, id := range []string{ticket.NewID(), ticket.NewID(), `odd "id" \ with escapes` + "\n"} {
		for _, dedup := range []bool{false, true} {
			want, err := canonjson.Marshal(map[string]any{"status": protocol.StatusCreated, "ticket_id": id})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want[:len(want)-1], []byte(`,"deduplicated":`+map[bool]string{false: "false", true: "true"}[dedup]+`}`)...)
			if got := protocol.Done(protocol.StatusCreated, c.result(ticket.Created(id), nil, dedup)).Body(); !bytes.Equal(got, want) {
				t.Errorf("answer %s, want %s", got, want)
			}
		}
	}
	for _, bad := range []string{`{"status":`, `"x"`, `[]`, ``} {
		if storedObject([]byte(bad)) == nil {
			t.Errorf("storedObject accepted %q", bad)
		}
	}
}
