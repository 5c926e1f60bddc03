package dynamo

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Attribute names. TTLAttribute must equal the table's TimeToLiveSpecification
// (template.yaml); a test checks that it does.
const (
	PartitionKey = "pk"
	TTLAttribute = "expires_at"

	attrKind        = "kind"
	attrUserID      = "user_id"
	attrTenant      = "tenant_id"
	attrName        = "name"
	attrActive      = "active"
	attrFunctions   = "functions"
	attrFunction    = "function"
	attrState       = "state"
	attrResult      = "result"
	attrFingerprint = "fingerprint"
	attrTicketID    = "ticket_id"
	attrCreatedAt   = "created_at"
	attrTitle       = "title"
	attrDescription = "description"
	attrPriority    = "priority"
	attrTags        = "tags"
	attrOpKey       = "operation_key"
	attrRequestID   = "request_id"
	// attrToken names the call that claimed an operation
	// (idempotency.Record.Token).
	attrToken = "token"
	// attrUserVer is the version of its user's record the call that
	// wrote an operation or a ticket read.
	attrUserVer = "user_ver"
)

// Key prefixes.
const (
	userPrefix   = "user#"
	opPrefix     = "op#"
	ticketPrefix = "ticket#"
)

func strAV(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func numAV(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func pk(v string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{PartitionKey: strAV(v)}
}

// newItem returns an item holding only its key, with room for n attributes
// in all, so that filling it never grows the map.
func newItem(key string, n int) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, n)
	item[PartitionKey] = strAV(key)
	return item
}

func userKey(id string) map[string]types.AttributeValue   { return pk(userPrefix + id) }
func opKey(key string) map[string]types.AttributeValue    { return pk(opPrefix + key) }
func ticketKey(id string) map[string]types.AttributeValue { return pk(ticketPrefix + id) }

func userItem(u identity.User) map[string]types.AttributeValue {
	item := newItem(userPrefix+u.ExternalID, 8)
	item[attrKind] = strAV("user")
	item[attrTenant] = strAV(u.Tenant)
	item[attrLookup], item[attrLookupSort] = strAV(tenantLookup(u.Tenant)), strAV(u.ExternalID)
	item[attrName] = strAV(u.Name)
	item[attrActive] = &types.AttributeValueMemberBOOL{Value: u.Active}
	// Never empty: PutUser and AddUser refuse a user without functions.
	item[attrFunctions] = &types.AttributeValueMemberSS{Value: u.Functions}
	return item
}

func operationItem(r idempotency.Record) map[string]types.AttributeValue {
	item := newItem(opPrefix+r.Key, 13)
	item[attrKind] = strAV("operation")
	item[attrUserID] = strAV(r.UserID)
	item[attrTenant] = strAV(r.Tenant)
	item[attrFunction] = strAV(r.Function)
	item[attrState] = strAV(string(r.State))
	item[attrFingerprint] = strAV(r.Fingerprint)
	item[attrCreatedAt] = numAV(r.CreatedAt.Unix())
	if r.TicketID != "" {
		item[attrTicketID] = strAV(r.TicketID)
	}
	if len(r.Result) > 0 {
		item[attrResult] = strAV(string(r.Result))
	}
	if !r.ExpiresAt.IsZero() {
		item[TTLAttribute] = numAV(r.ExpiresAt.Unix())
	}
	item[attrUserVer] = numAV(r.UserVersion)
	if r.Token != "" {
		item[attrToken] = strAV(r.Token)
	}
	return item
}

func ticketItem(t ticket.Ticket) map[string]types.AttributeValue {
	item := newItem(ticketPrefix+t.ID, 15)
	item[attrKind] = strAV("ticket")
	item[attrTenant] = strAV(t.Tenant)
	item[attrUserID] = strAV(t.UserID)
	item[attrTitle] = strAV(t.Title)
	if t.Description != "" {
		item[attrDescription] = strAV(t.Description)
	}
	item[attrPriority] = strAV(t.Priority)
	if len(t.Tags) > 0 {
		tags := make([]types.AttributeValue, len(t.Tags))
		for i, tag := range t.Tags {
			tags[i] = strAV(tag)
		}
		item[attrTags] = &types.AttributeValueMemberL{Value: tags}
	}
	item[attrCreatedAt] = strAV(t.CreatedAt.UTC().Format(time.RFC3339Nano))
	if t.Function != "" {
		item[attrFunction] = strAV(t.Function)
	}
	item[attrOpKey] = strAV(t.OperationKey)
	item[attrRequestID] = strAV(t.RequestID)
	item[attrUserVer] = numAV(t.UserVersion)
	if t.RequestID != "" {
		// LookupIndex: the operator finds the ticket by tenant + request id.
		item[attrLookup], item[attrLookupSort] = strAV(requestLookup(t.Tenant, t.RequestID)), strAV(lookupTime(t.CreatedAt))
	}
	return item
}

// decoder reads attributes and remembers the first problem.
type decoder struct {
	item map[string]types.AttributeValue
	err  error
}

func (d *decoder) str(name string, required bool) string {
	switch v := d.item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case nil:
		if required && d.err == nil {
			d.err = fmt.Errorf("dynamo: item lacks %s", name)
		}
	default:
		if d.err == nil {
			d.err = fmt.Errorf("dynamo: %s is not a string", name)
		}
	}
	return ""
}

// int reads an integer attribute; 0 when absent (an item written before
// it existed).
func (d *decoder) int(name string) int64 {
	n, err := intAttr(d.item, name)
	if err != nil && d.err == nil {
		d.err = err
	}
	return n
}

func (d *decoder) unix(name string) time.Time {
	switch v := d.item[name].(type) {
	case *types.AttributeValueMemberN:
		secs, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			// TTL attributes may be written by other tools as decimals.
			f, ferr := strconv.ParseFloat(v.Value, 64)
			if ferr != nil {
				if d.err == nil {
					d.err = fmt.Errorf("dynamo: %s is not a number", name)
				}
				return time.Time{}
			}
			secs = int64(f)
		}
		return time.Unix(secs, 0).UTC()
	case nil:
		return time.Time{}
	default:
		if d.err == nil {
			d.err = fmt.Errorf("dynamo: %s is not a number", name)
		}
		return time.Time{}
	}
}

func decodeUser(item map[string]types.AttributeValue, externalID string) (identity.User, error) {
	d := decoder{item: item}
	u := identity.User{ExternalID: externalID, Tenant: d.str(attrTenant, true), Name: d.str(attrName, false)}
	if b, ok := item[attrActive].(*types.AttributeValueMemberBOOL); ok {
		u.Active = b.Value
	}
	if fns, ok := item[attrFunctions].(*types.AttributeValueMemberSS); ok {
		u.Functions = fns.Value
	}
	u.Version = d.int(attrUserVersion)
	u.Revoked = d.int(attrRevoked)
	return u, d.err
}

func decodeOperation(item map[string]types.AttributeValue) (idempotency.Record, error) {
	d := decoder{item: item}
	r := idempotency.Record{
		UserID:      d.str(attrUserID, true),
		Tenant:      d.str(attrTenant, false),
		Function:    d.str(attrFunction, false),
		State:       idempotency.State(d.str(attrState, true)),
		Fingerprint: d.str(attrFingerprint, false),
		TicketID:    d.str(attrTicketID, false),
		Result:      []byte(d.str(attrResult, false)),
		CreatedAt:   d.unix(attrCreatedAt),
		ExpiresAt:   d.unix(TTLAttribute),
		UserVersion: d.int(attrUserVer),
		Token:       d.str(attrToken, false),
	}
	key := d.str(PartitionKey, true)
	if len(key) > len(opPrefix) {
		r.Key = key[len(opPrefix):]
	}
	if d.err == nil && r.State == idempotency.Completed && len(r.Result) == 0 {
		d.err = fmt.Errorf("dynamo: completed operation %s has no result", r.Key)
	}
	return r, d.err
}

func decodeTicket(item map[string]types.AttributeValue) (ticket.Ticket, error) {
	d := decoder{item: item}
	t := ticket.Ticket{
		Tenant:       d.str(attrTenant, true),
		UserID:       d.str(attrUserID, false),
		Title:        d.str(attrTitle, true),
		Description:  d.str(attrDescription, false),
		Priority:     d.str(attrPriority, false),
		Function:     d.str(attrFunction, false),
		OperationKey: d.str(attrOpKey, false),
		RequestID:    d.str(attrRequestID, false),
		UserVersion:  d.int(attrUserVer),
	}
	key := d.str(PartitionKey, true)
	if len(key) > len(ticketPrefix) {
		t.ID = key[len(ticketPrefix):]
	}
	if l, ok := item[attrTags].(*types.AttributeValueMemberL); ok {
		for _, e := range l.Value {
			if sv, ok := e.(*types.AttributeValueMemberS); ok {
				t.Tags = append(t.Tags, sv.Value)
			}
		}
	}
	if c := d.str(attrCreatedAt, false); c != "" {
		t.CreatedAt, _ = time.Parse(time.RFC3339Nano, c)
	}
	return t, d.err
}
