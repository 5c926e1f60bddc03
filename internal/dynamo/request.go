package dynamo

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/outcome"
)

// requestPrefix starts the key of a request item: what one user's request
// id created, written by Create's transaction with the operation it names.
const requestPrefix = "request#"

// attrOperations counts the operations a request item's id created.
const attrOperations = "operations"

// requestKeyOf is the partition key of userID's request item for
// requestID. The user's external id is unique in the table (it is the
// key of the user's record), so the item is found from the two alone,
// without reading the user.
func requestKeyOf(userID, requestID string) string {
	return requestPrefix + lookupKey(userID, requestID)
}

// requestUpdate is the request item's part of Create's transaction: it
// records the first operation created under the id and counts every one.
// Each attribute of the first is set only when absent (if_not_exists),
// so a later operation under the same id (other arguments) leaves it and
// only adds to the count; the transaction's ClientRequestToken keeps a
// retried transaction from counting twice.
func (s *Store) requestUpdate(rec idempotency.Record, requestID string) *types.Update {
	names := map[string]string{
		"#kind": attrKind, "#user": attrUserID, "#rid": attrRequestID, "#tenant": attrTenant, "#fn": attrFunction,
		"#op": attrOpKey, "#created": attrCreatedAt, "#n": attrOperations,
	}
	values := map[string]types.AttributeValue{
		":kind": strAV("request"), ":user": strAV(rec.UserID), ":rid": strAV(requestID), ":tenant": strAV(rec.Tenant),
		":fn": strAV(rec.Function), ":op": strAV(rec.Key), ":created": numAV(rec.CreatedAt.Unix()), ":one": numAV(1),
	}
	expr := "SET #kind = :kind, #user = :user, #rid = :rid, #tenant = if_not_exists(#tenant, :tenant), #fn = if_not_exists(#fn, :fn), " +
		"#op = if_not_exists(#op, :op), #created = if_not_exists(#created, :created)"
	if rec.TicketID != "" {
		names["#ticket"], values[":ticket"] = attrTicketID, strAV(rec.TicketID)
		expr += ", #ticket = if_not_exists(#ticket, :ticket)"
	}
	if len(rec.Result) > 0 {
		names["#result"], values[":result"] = attrResult, strAV(string(rec.Result))
		expr += ", #result = if_not_exists(#result, :result)"
	}
	return &types.Update{
		TableName:                 &s.table,
		Key:                       pk(requestKeyOf(rec.UserID, requestID)),
		UpdateExpression:          aws.String(expr + " ADD #n :one"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// RequestRecord reads userID's request item for requestID with one
// strongly consistent GetItem; nil when the id created nothing for the
// user.
func (s *Store) RequestRecord(ctx context.Context, userID, requestID string) (*outcome.Record, error) {
	item, err := s.get(ctx, pk(requestKeyOf(userID, requestID)))
	if err != nil || item == nil {
		return nil, err
	}
	return decodeRequest(item)
}

// RequestRecordKey is the key of the one GetItem RequestRecord sends,
// for benchmarks that measure it against the bare client.
func (s *Store) RequestRecordKey(userID, requestID string) map[string]types.AttributeValue {
	return pk(requestKeyOf(userID, requestID))
}

func decodeRequest(item map[string]types.AttributeValue) (*outcome.Record, error) {
	d := decoder{item: item}
	r := &outcome.Record{
		UserID:       d.str(attrUserID, true),
		RequestID:    d.str(attrRequestID, true),
		Tenant:       d.str(attrTenant, false),
		Function:     d.str(attrFunction, false),
		OperationKey: d.str(attrOpKey, false),
		TicketID:     d.str(attrTicketID, false),
		Result:       []byte(d.str(attrResult, false)),
		CreatedAt:    d.unix(attrCreatedAt),
	}
	if n, ok := item[attrOperations].(*types.AttributeValueMemberN); ok {
		r.Operations, _ = strconv.Atoi(n.Value)
	}
	if len(r.Result) == 0 {
		r.Result = nil
	}
	return r, d.err
}
