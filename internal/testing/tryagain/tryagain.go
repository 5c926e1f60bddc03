// Package tryagain is the application's side of a user's "try again", as
// docs/connect-aivax.md shows it (a test holds the page's code to this
// file): read the operation's outcome from oncecall first, reuse the
// request id while nothing is known, and tell the user about a ticket that
// was in fact created.
package tryagain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Outcome is oncecall's answer to GET /outcome.
type Outcome struct {
	Status   string `json:"status"` // "none" or "found"
	Function string `json:"function"`
	TicketID string `json:"ticket_id"`
}

// ReadOutcome asks oncecall what it holds for the user's request id.
// Locally the credential is the key make run logs; on AWS, sign the
// request with SigV4 instead (service execute-api), as a role allowed
// OutcomeRouteArn.
func ReadOutcome(ctx context.Context, base, key, user, requestID string) (Outcome, error) {
	q := url.Values{"user": {user}, "request_id": {requestID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/outcome?"+q.Encode(), nil)
	if err != nil {
		return Outcome{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return Outcome{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return Outcome{}, fmt.Errorf("outcome read: HTTP %d", res.StatusCode)
	}
	var o Outcome
	return o, json.NewDecoder(res.Body).Decode(&o)
}

// TryAgain handles the user's "try again" of the operation sent under
// requestID, whose answer never arrived: send stands for your call to
// AIVAX with the user and metadata.request_id. It returns the ticket that
// exists for the operation, and whether the application sent it again.
func TryAgain(ctx context.Context, base, key, user, requestID string, send func(requestID string) error) (ticketID string, sent bool, err error) {
	o, err := ReadOutcome(ctx, base, key, user, requestID)
	if err != nil {
		return "", false, err // nothing known: keep requestID for the next try
	}
	if o.Status == "found" {
		// The first attempt did create it: tell the user, send nothing.
		return o.TicketID, false, nil
	}
	// Nothing stored: the same id again, never a new one, so that a first
	// attempt still on its way cannot become a second ticket.
	if err := send(requestID); err != nil {
		return "", true, err
	}
	o, err = ReadOutcome(ctx, base, key, user, requestID)
	return o.TicketID, true, err
}
