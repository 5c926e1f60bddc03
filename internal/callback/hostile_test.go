package callback_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/hostile"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/localdb"
)

// maxAnswerBytes bounds every refusal: a message says what to fix, it does
// not echo the caller's payload back.
const maxAnswerBytes = 1024

// TestHostileCatalogue sends every case of the hostile catalogue over HTTP
// to one server and checks its answer, that it wrote nothing, and that it
// disclosed nothing of an operation seeded before the first case. The cases
// run in catalogue order on one table.
func TestHostileCatalogue(t *testing.T) {
	r := newRig(t)
	secret := r.mustCreate(create(hostile.Owner, hostile.SecretRequestID, hostile.SecretArgs))
	nonces, err := hostile.NewNonces(localdb.DemoHookKey, testCost)
	if err != nil {
		t.Fatal(err)
	}
	cases := hostile.Cases(nonces)
	if len(cases) < 40 {
		t.Fatalf("only %d cases in the catalogue", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			body := bytes.ReplaceAll(c.Body, []byte(hostile.SecretPlaceholder), []byte(secret))
			req, err := http.NewRequest(http.MethodPost, r.srv.URL+httpapi.CallbackPath, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			headers := c.Headers
			if headers == nil {
				headers = []hostile.Header{{Name: hostile.NonceHeader, Value: nonces.Valid}}
			}
			for _, h := range headers {
				req.Header[h.Name] = append(req.Header[h.Name], h.Value) // the name as written, on the wire
			}
			tickets, ops := r.tickets(), r.operations()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			checkHostileAnswer(t, c, res.StatusCode, raw, body, secret)
			if got := r.tickets() - tickets; got != c.Writes {
				t.Errorf("%d tickets written, want %d", got, c.Writes)
			}
			if got := r.operations() - ops; got != c.Writes {
				t.Errorf("%d operations written, want %d", got, c.Writes)
			}
		})
	}
	logs := r.logs.String()
	for _, s := range []string{nonces.Valid, nonces.WrongKey, localdb.DemoHookKey, hostile.SecretTitle, "Cannot sign in"} {
		if strings.Contains(logs, s) {
			t.Errorf("the log contains %q", s)
		}
	}
}

// checkHostileAnswer checks one answer against its case. It is shared with
// nothing: apigw has its own copy over its own transport.
func checkHostileAnswer(t *testing.T, c hostile.Case, status int, raw, sent []byte, secret string) {
	t.Helper()
	var body struct {
		Status       string `json:"status"`
		TicketID     string `json:"ticket_id"`
		Deduplicated *bool  `json:"deduplicated"`
		Error        *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("answer is not JSON: %q", raw)
	}
	if status != c.Status || body.Status != c.Outcome {
		t.Fatalf("answer %d %s, want %d with status %q", status, raw, c.Status, c.Outcome)
	}
	if c.Code != "" {
		if body.Error == nil || body.Error.Code != c.Code {
			t.Fatalf("answer %s, want code %q", raw, c.Code)
		}
		if !strings.Contains(body.Error.Message, c.Fix) {
			t.Errorf("message %q does not say %q", body.Error.Message, c.Fix)
		}
		if len(raw) > maxAnswerBytes {
			t.Errorf("a refusal of %d bytes; at most %d", len(raw), maxAnswerBytes)
		}
	}
	if c.Outcome == "created" {
		if body.TicketID == "" || body.Deduplicated == nil || *body.Deduplicated != c.Deduplicated {
			t.Errorf("answer %s, want deduplicated %v", raw, c.Deduplicated)
		}
		if c.Authorized && body.TicketID != secret {
			t.Errorf("the owner's repeat named %s, want the seeded %s", body.TicketID, secret)
		}
	}
	if !c.Authorized {
		// An answer may echo what the caller sent, nothing more.
		if strings.Contains(string(raw), secret) && !bytes.Contains(sent, []byte(secret)) {
			t.Errorf("the seeded ticket id leaked: %s", raw)
		}
		if strings.Contains(string(raw), hostile.SecretTitle) {
			t.Errorf("the seeded title leaked: %s", raw)
		}
	}
}
