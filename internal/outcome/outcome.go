package outcome

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Record is what the store keeps for one user and request id: the first
// operation created under it, and how many were (under the default key
// policy, a call with other arguments is another operation).
type Record struct {
	UserID    string
	RequestID string
	Tenant    string
	Function  string
	// OperationKey is the first operation's key (op_key in the log).
	OperationKey string
	TicketID     string
	// Result is the JSON object the first call was answered, without the
	// "deduplicated" member.
	Result []byte
	// CreatedAt is when the first operation was created.
	CreatedAt time.Time
	// Operations counts the operations created under the request id.
	Operations int
}

// Store is what Read needs from storage. The dynamo package implements it.
type Store interface {
	// RequestRecord reads the record of userID and requestID with one
	// strongly consistent read; nil when there is none.
	RequestRecord(ctx context.Context, userID, requestID string) (*Record, error)
	// Delivery reads the delivery of a ticket, nil when it has none.
	Delivery(ctx context.Context, ticketID string) (*delivery.Record, error)
}

// Statuses of a View.
const (
	// StatusNone: nothing was written under this request id for this
	// user. The same id is safe to send again, and so is a new one.
	StatusNone = "none"
	// StatusFound: an operation was created under this request id.
	StatusFound = "found"
)

// View is the answer to an outcome read. An id another user holds reads
// as StatusNone: nothing of that user's operation is disclosed, and
// nothing was written for this one.
type View struct {
	Status    string `json:"status"`
	RequestID string `json:"request_id"`
	Function  string `json:"function,omitempty"`
	// Result is the first operation's answer as the model saw it
	// ({"status":"created","ticket_id":…}).
	Result    json.RawMessage `json:"result,omitempty"`
	TicketID  string          `json:"ticket_id,omitempty"`
	CreatedAt string          `json:"created_at,omitempty"`
	// Operations is how many operations the id created; more than one
	// means calls with other arguments under the same id
	// (oncecall-admin find lists them).
	Operations int `json:"operations,omitempty"`
	// Delivery is the ticket's delivery now, with a destination.
	Delivery *delivery.View `json:"delivery,omitempty"`
}

// Reader reads outcomes.
type Reader struct {
	Store Store
	// Deliveries says the deployment has a destination: a found ticket's
	// delivery is read too.
	Deliveries bool
	Now        func() time.Time
}

// Read answers what oncecall holds for userID's requestID.
func (r Reader) Read(ctx context.Context, userID, requestID string) (View, error) {
	v := View{Status: StatusNone, RequestID: requestID}
	rec, err := r.Store.RequestRecord(ctx, userID, requestID)
	if err != nil || rec == nil {
		return v, err
	}
	if rec.UserID != userID || rec.RequestID != requestID {
		return v, nil // never another's record, whatever the store holds
	}
	v.Status, v.Function, v.TicketID, v.Operations = StatusFound, rec.Function, rec.TicketID, rec.Operations
	if json.Valid(rec.Result) {
		v.Result = rec.Result
	}
	if !rec.CreatedAt.IsZero() {
		v.CreatedAt = rec.CreatedAt.UTC().Format(time.RFC3339)
	}
	if r.Deliveries && rec.TicketID != "" {
		d, err := r.Store.Delivery(ctx, rec.TicketID)
		if err != nil {
			return View{}, err
		}
		if d != nil {
			now := time.Now
			if r.Now != nil {
				now = r.Now
			}
			dv := d.View(now())
			v.Delivery = &dv
		}
	}
	return v, nil
}
