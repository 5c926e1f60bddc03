package hostiletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxAnswerBytes bounds every refusal: a message says what to fix; it does
// not repeat the payload back.
const MaxAnswerBytes = 1024

// Check compares one answer with the case, whatever transport carried it.
// sent is the body as sent and secret the seeded ticket id. It returns every
// way the answer is wrong; none means it is right.
func (c Case) Check(status int, raw, sent []byte, secret string) []string {
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
		return []string{fmt.Sprintf("answer is not JSON: %q", raw)}
	}
	if status != c.Status || body.Status != c.Outcome {
		return []string{fmt.Sprintf("answer %d %s, want %d with status %q", status, raw, c.Status, c.Outcome)}
	}
	var wrong []string
	if c.Code != "" {
		switch {
		case body.Error == nil || body.Error.Code != c.Code:
			wrong = append(wrong, fmt.Sprintf("answer %s, want code %q", raw, c.Code))
		case !strings.Contains(body.Error.Message, c.Fix):
			wrong = append(wrong, fmt.Sprintf("message %q does not say %q", body.Error.Message, c.Fix))
		}
		if len(raw) > MaxAnswerBytes {
			wrong = append(wrong, fmt.Sprintf("a refusal of %d bytes; at most %d", len(raw), MaxAnswerBytes))
		}
	}
	if c.Outcome == "created" {
		if body.TicketID == "" || body.Deduplicated == nil || *body.Deduplicated != c.Deduplicated {
			wrong = append(wrong, fmt.Sprintf("answer %s, want deduplicated %v", raw, c.Deduplicated))
		}
		if c.Authorized && body.TicketID != secret {
			wrong = append(wrong, fmt.Sprintf("the owner's repeat named %s, want the seeded %s", body.TicketID, secret))
		}
	}
	if !c.Authorized {
		wrong = append(wrong, leaks(raw, sent, secret)...)
	}
	return wrong
}

// leaks is what an answer raw to a caller not allowed to see the seeded
// ticket discloses of it: an answer may echo what the caller sent, nothing
// more.
func leaks(raw, sent []byte, secret string) []string {
	var wrong []string
	if bytes.Contains(raw, []byte(secret)) && !bytes.Contains(sent, []byte(secret)) {
		wrong = append(wrong, fmt.Sprintf("the seeded ticket id leaked: %s", raw))
	}
	if bytes.Contains(raw, []byte(SecretTitle)) {
		wrong = append(wrong, fmt.Sprintf("the seeded title leaked: %s", raw))
	}
	return wrong
}
