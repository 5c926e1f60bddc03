package dynamo

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/ticket"
)

// idKeyPK is the partition key of the item holding the deployment's id
// key, the key of ticket.IDFor. The key lives in the table beside the
// tickets whose ids it made, so a copy or a restore of the table keeps
// the two together.
const idKeyPK = "config#ids"

// attrIDKey holds the id key's bytes.
const attrIDKey = "key"

// idKeyCache remembers the id key once read: it never changes. key is
// read without the lock on every call; mu only serializes the first read.
type idKeyCache struct {
	key atomic.Pointer[[]byte]
	mu  sync.Mutex
}

// FirstTicketID returns the id of the first ticket userID's requestID
// creates (ticket.IDFor under the table's id key). The first call on a
// table without a key creates it: a conditional PutItem of 32 random
// bytes, then a strongly consistent read of what the table holds, so two
// first calls at once, or a put whose answer was lost, end with the one
// key the table keeps.
func (s *Store) FirstTicketID(ctx context.Context, userID, requestID string) (string, error) {
	key, err := s.idKey(ctx, true)
	if err != nil {
		return "", err
	}
	return ticket.IDFor(key, userID, requestID), nil
}

// idKey returns the table's id key, once read kept for the Store's life;
// nil when the table has none and create is false (then no ticket has an
// id ticket.IDFor made).
func (s *Store) idKey(ctx context.Context, create bool) ([]byte, error) {
	if k := s.ids.key.Load(); k != nil {
		return *k, nil
	}
	s.ids.mu.Lock()
	defer s.ids.mu.Unlock()
	if k := s.ids.key.Load(); k != nil {
		return *k, nil
	}
	item, err := s.get(ctx, pk(idKeyPK))
	if err != nil {
		return nil, err
	}
	if item == nil {
		if !create {
			return nil, nil
		}
		fresh := make([]byte, ticket.IDKeyBytes)
		_, _ = rand.Read(fresh) // crypto/rand.Read never fails
		put := s.retry(ctx, func() error {
			_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: &s.table,
				Item: map[string]types.AttributeValue{
					PartitionKey:  strAV(idKeyPK),
					attrKind:      strAV("config"),
					attrIDKey:     &types.AttributeValueMemberB{Value: fresh},
					attrCreatedAt: numAV(s.now().Unix()),
				},
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": PartitionKey},
			})
			return err
		})
		// Whatever the put's answer (written, refused because another
		// call wrote a key first, or lost), the key is what the table
		// holds now.
		if item, err = s.get(ctx, pk(idKeyPK)); err != nil {
			return nil, err
		}
		if item == nil {
			if put == nil {
				put = fmt.Errorf("dynamo: the id key was put and is not there")
			}
			return nil, put
		}
	}
	b, ok := item[attrIDKey].(*types.AttributeValueMemberB)
	if !ok || len(b.Value) != ticket.IDKeyBytes {
		return nil, fmt.Errorf("dynamo: the item %s holds no %d-byte key", idKeyPK, ticket.IDKeyBytes)
	}
	s.ids.key.Store(&b.Value)
	return b.Value, nil
}

// IDKeyAttributes are the attributes of the id key's item, sorted, which
// the callback's role may put (on that key only).
func IDKeyAttributes() []string {
	return []string{attrCreatedAt, attrIDKey, attrKind, PartitionKey}
}
