package outcome

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Record is what the store keeps for one user and request id: the first
// operation created under it (under the default key policy, a call with
// other arguments is another operation, which the record does not show;
// oncecall-admin find lists them all).
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
	// Delivery is the delivery of TicketID, nil when it has none.
	Delivery *delivery.Record
}

// Store is what Read needs from storage. The dynamo package implements it.
type Store interface {
	// RequestRecord reads the record of userID and requestID, its
	// ticket's delivery with it, with one strongly consistent read; nil
	// when there is none.
	RequestRecord(ctx context.Context, userID, requestID string) (*Record, error)
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
	// Delivery is the ticket's delivery now, when it has one (the
	// deployment has a destination).
	Delivery *delivery.View `json:"delivery,omitempty"`
}

// Reader reads outcomes.
type Reader struct {
	Store Store
	Now   func() time.Time
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
	v.Status, v.Function, v.TicketID = StatusFound, rec.Function, rec.TicketID
	if json.Valid(rec.Result) {
		v.Result = rec.Result
	}
	if !rec.CreatedAt.IsZero() {
		v.CreatedAt = rec.CreatedAt.UTC().Format(time.RFC3339)
	}
	if rec.Delivery != nil {
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		dv := rec.Delivery.View(now())
		v.Delivery = &dv
	}
	return v, nil
}
