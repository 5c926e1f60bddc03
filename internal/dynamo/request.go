package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/outcome"
	"github.com/oncecall/oncecall/internal/ticket"
)

// RequestRecord reads the first ticket userID's requestID created, and
// its delivery, with one strongly consistent GetItem of the id
// FirstTicketID names; nil when the id created none for the user. The id
// key, read once per Store, is the only other read: on a table without
// one no ticket has such an id, and the answer is nil with no more.
func (s *Store) RequestRecord(ctx context.Context, userID, requestID string) (*outcome.Record, error) {
	k, err := s.RequestRecordKey(ctx, userID, requestID)
	if err != nil || k == nil {
		return nil, err
	}
	item, err := s.get(ctx, k)
	if err != nil || item == nil {
		return nil, err
	}
	t, err := decodeTicket(item)
	if err != nil {
		return nil, err
	}
	if t.UserID != userID || t.RequestID != requestID {
		return nil, nil // not this user's request: nothing of it is disclosed
	}
	d, err := decodeDelivery(item)
	if err != nil {
		return nil, err
	}
	return &outcome.Record{
		UserID:       t.UserID,
		RequestID:    t.RequestID,
		Tenant:       t.Tenant,
		Function:     t.Function,
		OperationKey: t.OperationKey,
		TicketID:     t.ID,
		Result:       ticket.Created(t.ID),
		CreatedAt:    t.CreatedAt.Truncate(time.Second),
		Delivery:     d,
	}, nil
}

// RequestRecordKey is the key of the one GetItem RequestRecord sends once
// the id key is known (benchmarks read it with the bare client); nil when
// the table has no id key, and so no ticket has an id it names.
func (s *Store) RequestRecordKey(ctx context.Context, userID, requestID string) (map[string]types.AttributeValue, error) {
	key, err := s.idKey(ctx, false)
	if err != nil || key == nil {
		return nil, err
	}
	return ticketKey(ticket.IDFor(key, userID, requestID)), nil
}
