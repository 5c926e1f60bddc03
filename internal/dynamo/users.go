package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/identity"
)

// Attributes of a user record's versions.
const (
	// attrUserVersion counts the changes Admin made to a user record.
	attrUserVersion = "ver"
	// attrRevoked is the version of the record's last change that took
	// access away (identity.User.Revoked); absent when none has.
	attrRevoked = "revoked_at_ver"
)

// UserRecord is a user record as an operator reads and changes it.
//
// A user is this one item of the table. Every call reads it (Store.LoadUser)
// and nothing else holds a copy of it, so each change is one conditional
// write of it, and deleting it, by any means, refuses every call that reads
// it afterwards.
//
// Its Version is raised by one by every Admin.UpdateUser; 0 for a record
// no such change has touched (written by AddUser, PutUser or the demo
// seed). A change is made only if the record is still at the version the
// operator read, and a change sent again after its answer was lost knows
// its own write by the version it wrote: never by a clock. A change that
// takes access away also sets Revoked to the version it writes.
type UserRecord struct {
	identity.User
}

// ErrUserExists is returned by Admin.AddUser when the id is taken.
var ErrUserExists = errors.New("dynamo: a user with this id already exists")

// ErrConflict is matched (errors.Is) by a *ConflictError.
var ErrConflict = errors.New("dynamo: the record changed since it was read")

// ConflictError is returned by Admin.UpdateUser and Admin.DeleteUser when
// the record is no longer the one the operator read: another change came
// first. Nothing was written, unless MaybeWritten.
type ConflictError struct {
	// Read is the version the change was conditional on.
	Read int64
	// Current is the record as it is now, when the store returned it.
	Current *UserRecord
	// MaybeWritten is true when the change was sent more than once (an
	// answer lost): an earlier attempt may have applied before the change
	// that Current shows. Whether the record now refuses what was asked
	// is read from Current, never assumed.
	MaybeWritten bool
}

func (e *ConflictError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("%s (read at version %d)", ErrConflict, e.Read)
	}
	return fmt.Sprintf("%s (read at version %d, now at version %d)", ErrConflict, e.Read, e.Current.Version)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// User reads the record of id with a strongly consistent read, or returns
// identity.ErrUnknown.
func (a *Admin) User(ctx context.Context, id string) (UserRecord, error) {
	item, err := a.store.get(ctx, userKey(id))
	if err != nil {
		return UserRecord{}, err
	}
	if item == nil {
		return UserRecord{}, identity.ErrUnknown
	}
	return decodeUserRecord(item, id)
}

func decodeUserRecord(item map[string]types.AttributeValue, id string) (UserRecord, error) {
	u, err := decodeUser(item, id)
	if err != nil {
		return UserRecord{}, err
	}
	return UserRecord{User: u}, nil
}

// intAttr reads the integer attribute name of an item; 0 when absent.
func intAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamo: %s is not an integer", name)
	}
	return n, nil
}

// AddUser creates the record of u, at version 0, in one conditional
// write, unless one with its id exists: then it returns that record and
// ErrUserExists, having written nothing. A user needs at least one
// function (ErrNoFunctions).
func (a *Admin) AddUser(ctx context.Context, u identity.User) (UserRecord, error) {
	current, err := a.store.addUser(ctx, u)
	if current != nil {
		return *current, err
	}
	if err != nil {
		return UserRecord{}, err
	}
	return UserRecord{User: u}, nil
}

// UserPage is one page of a tenant's users.
type UserPage struct {
	// Users are in the order of their ids (as strings of bytes).
	Users []UserRecord
	// Next is the id of the last user listed when more follow: pass it as
	// after for the next page. Empty on the last page.
	Next string
}

// Users lists up to limit (1 to MaxListUsers) users of tenant whose ids
// sort after after ("" from the first), in id order. It queries
// LookupIndex, never scans, and reads the records themselves with strongly
// consistent reads; an index entry the table no longer bears out (a user
// deleted or moved to another tenant a moment ago) is left out.
func (a *Admin) Users(ctx context.Context, tenant, after string, limit int) (UserPage, error) {
	if limit < 1 || limit > MaxListUsers {
		return UserPage{}, fmt.Errorf("dynamo: list limit %d is outside 1 to %d", limit, MaxListUsers)
	}
	keys, more, err := a.queryKeys(ctx, tenantLookup(tenant), after, limit)
	if err != nil {
		return UserPage{}, err
	}
	items, err := a.batchGet(ctx, keys)
	if err != nil {
		return UserPage{}, err
	}
	page := UserPage{Users: make([]UserRecord, 0, len(keys))}
	for _, k := range keys {
		item, ok := items[k]
		if !ok || !strings.HasPrefix(k, userPrefix) {
			continue
		}
		r, err := decodeUserRecord(item, strings.TrimPrefix(k, userPrefix))
		if err != nil {
			return UserPage{}, err
		}
		if r.Tenant == tenant {
			page.Users = append(page.Users, r)
		}
	}
	if more && len(keys) > 0 {
		page.Next = strings.TrimPrefix(keys[len(keys)-1], userPrefix)
	}
	return page, nil
}

// UpdateUser changes the record read to to in one conditional write,
// writing only the fields that differ (name, active, functions), on
// condition that the record is still at read.Version in read.Tenant. It
// returns the new record, at read.Version+1; read itself when nothing
// differs, without writing. A write whose answer was lost is sent again
// and meets its own effect: the record at read.Version+1 exactly as
// asked, which is success. A record changed meanwhile is a *ConflictError
// (errors.Is ErrConflict), a deleted one identity.ErrUnknown; in both
// cases nothing was written. The id and the tenant cannot be changed, and
// a user keeps at least one function (ErrNoFunctions: disable the user
// instead).
//
// A change that takes access away (the user disabled, a function
// revoked) also sets Revoked to the new version: every ticket and stored
// result made under an earlier version is superseded, however late its
// write lands (identity.User.Vouches). A call that read the record before
// the write may still answer until its deadline (callback.Deadline).
func (a *Admin) UpdateUser(ctx context.Context, read UserRecord, to identity.User) (UserRecord, error) {
	if to.ExternalID != read.ExternalID || to.Tenant != read.Tenant {
		return UserRecord{}, errors.New("dynamo: UpdateUser cannot change a user's id or tenant")
	}
	if len(to.Functions) == 0 {
		return UserRecord{}, ErrNoFunctions
	}
	to.Functions = slices.Sorted(slices.Values(to.Functions))
	to.Functions = slices.Compact(to.Functions)
	names := map[string]string{"#pk": PartitionKey, "#ver": attrUserVersion, "#tenant": attrTenant, "#lk": attrLookup, "#lks": attrLookupSort}
	values := map[string]types.AttributeValue{
		":next":   numAV(read.Version + 1),
		":tenant": strAV(read.Tenant),
		":lk":     strAV(tenantLookup(read.Tenant)),
		":lks":    strAV(read.ExternalID),
	}
	// The index keys are derived from the id and the tenant, which this
	// cannot change; setting them again files a record written before
	// LookupIndex existed under its tenant.
	set := []string{"#ver = :next", "#lk = :lk", "#lks = :lks"}
	if to.Name != read.Name {
		names["#name"], values[":name"] = attrName, strAV(to.Name)
		set = append(set, "#name = :name")
	}
	if to.Active != read.Active {
		names["#active"], values[":active"] = attrActive, &types.AttributeValueMemberBOOL{Value: to.Active}
		set = append(set, "#active = :active")
	}
	if !slices.Equal(to.Functions, slices.Sorted(slices.Values(read.Functions))) {
		// Replaced whole under the version condition, which is exact, and
		// never emptied (checked above): no DELETE of a set's last element.
		names["#functions"], values[":functions"] = attrFunctions, &types.AttributeValueMemberSS{Value: to.Functions}
		set = append(set, "#functions = :functions")
	}
	if len(set) == 3 {
		return read, nil
	}
	to.Version, to.Revoked = read.Version+1, read.Revoked
	if takesAway(read.User, to) {
		// Every ticket and stored result made under an earlier version
		// is superseded (identity.User.Vouches), whenever it lands.
		names["#revoked"] = attrRevoked
		set = append(set, "#revoked = :next")
		to.Revoked = to.Version
	}

	cond := "attribute_exists(#pk) AND #tenant = :tenant AND " + atVersion(read.Version, values)
	in := &dynamodb.UpdateItemInput{
		TableName:                           &a.table,
		Key:                                 userKey(read.ExternalID),
		UpdateExpression:                    aws.String("SET " + strings.Join(set, ", ")),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	next := UserRecord{User: to}
	attempts, current, err := a.store.writeUser(ctx, read.ExternalID, func() error {
		_, err := a.api.UpdateItem(ctx, in)
		return err
	})
	switch {
	case err != nil:
		return UserRecord{}, err
	case !current.refused:
		return next, nil
	case current.record == nil:
		return UserRecord{}, identity.ErrUnknown
	}
	if attempts > 1 && sameUserRecord(*current.record, next) {
		// An earlier attempt committed and its answer was lost.
		return next, nil
	}
	return UserRecord{}, &ConflictError{Read: read.Version, Current: current.record, MaybeWritten: attempts > 1}
}

// atVersion is the condition that a record is still at version v, with
// its value set in values: a record no change has touched has no version.
func atVersion(v int64, values map[string]types.AttributeValue) string {
	if v == 0 {
		return "attribute_not_exists(#ver)"
	}
	values[":read"] = numAV(v)
	return "#ver = :read"
}

// refusal is what a conditional write of a user record met.
type refusal struct {
	// refused is true when the condition failed; record is the record as
	// it is then, nil when there is none.
	refused bool
	record  *UserRecord
}

// writeUser sends one conditional write of the record of id (send), tried
// again as retry tries it, and returns how many attempts it made and, when
// the condition failed, the record as it is now: from the failure, or read
// for stores that omit it. A refusal with attempts above 1 may be the
// write meeting its own earlier attempt, whose answer was lost.
func (s *Store) writeUser(ctx context.Context, id string, send func() error) (int, refusal, error) {
	attempts := 0
	err := s.retry(ctx, func() error {
		attempts++
		return send()
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return attempts, refusal{}, err
	}
	item := ccf.Item
	if len(item) == 0 {
		if item, err = s.get(ctx, userKey(id)); err != nil {
			return attempts, refusal{}, err
		}
	}
	if len(item) == 0 {
		return attempts, refusal{refused: true}, nil
	}
	r, err := decodeUserRecord(item, id)
	if err != nil {
		return attempts, refusal{}, err
	}
	return attempts, refusal{refused: true, record: &r}, nil
}

// takesAway reports whether changing from to to takes access away: the
// user disabled, or a function revoked.
func takesAway(from, to identity.User) bool {
	if from.Active && !to.Active {
		return true
	}
	for _, f := range from.Functions {
		if !slices.Contains(to.Functions, f) {
			return true
		}
	}
	return false
}

func sameUserRecord(a, b UserRecord) bool {
	return a.Version == b.Version && a.ExternalID == b.ExternalID && a.Tenant == b.Tenant && a.Name == b.Name &&
		a.Active == b.Active && slices.Equal(slices.Sorted(slices.Values(a.Functions)), slices.Sorted(slices.Values(b.Functions)))
}

// DeleteUser deletes the record read, in one conditional write, on
// condition that it is still at read.Version: every call that reads it
// afterwards is refused as unknown. A record changed meanwhile is a
// *ConflictError; one already gone is identity.ErrUnknown, unless it was
// this call's own earlier attempt that deleted it (its answer lost), which
// is success. Nothing else holds a copy of the user, so deleting its
// record by any other means takes its access away as well.
func (a *Admin) DeleteUser(ctx context.Context, read UserRecord) error {
	values := map[string]types.AttributeValue{}
	in := &dynamodb.DeleteItemInput{
		TableName: &a.table, Key: userKey(read.ExternalID),
		ConditionExpression:                 aws.String("attribute_exists(#pk) AND " + atVersion(read.Version, values)),
		ExpressionAttributeNames:            map[string]string{"#pk": PartitionKey, "#ver": attrUserVersion},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if len(values) > 0 {
		in.ExpressionAttributeValues = values
	}
	attempts, current, err := a.store.writeUser(ctx, read.ExternalID, func() error {
		_, err := a.api.DeleteItem(ctx, in)
		return err
	})
	switch {
	case err != nil || !current.refused:
		return err
	case current.record != nil:
		// After more than one attempt, the record may be one added again
		// after an earlier attempt deleted it.
		return &ConflictError{Read: read.Version, Current: current.record, MaybeWritten: attempts > 1}
	case attempts > 1:
		// An earlier attempt deleted it and its answer was lost.
		return nil
	}
	return identity.ErrUnknown
}
