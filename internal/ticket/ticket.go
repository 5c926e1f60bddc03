package ticket

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/schema"
)

// ErrExists is a store's answer to a ticket whose id another ticket
// holds already: nothing was written.
var ErrExists = errors.New("ticket: the id is taken")

// Function names.
const (
	CreateName = "create_ticket"
	GetName    = "get_ticket"
)

// Priorities a ticket can have.
var Priorities = []string{"low", "normal", "high", "urgent"}

// DefaultPriority is used when create_ticket is called without one.
const DefaultPriority = "normal"

// Field limits, in Unicode characters.
const (
	MaxTitle       = 200
	MaxDescription = 8000
	MaxTags        = 10
	MaxTag         = 32
)

var idPattern = schema.NewPattern(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// Create is the create_ticket function.
var Create = &schema.Function{
	Name:        CreateName,
	Description: "Create a support ticket. Call it once per problem; if the call fails or times out, call it again with the same arguments and it will not create a duplicate.",
	Params: []schema.Param{
		{Name: "title", Kind: schema.String, Required: true, MinLength: 1, MaxLength: MaxTitle,
			Description: "A one-line summary of the problem (1 to 200 characters)."},
		{Name: "description", Kind: schema.String, MaxLength: MaxDescription, Multiline: true,
			Description: "Details: what happened, what was expected, steps to reproduce (up to 8000 characters)."},
		{Name: "priority", Kind: schema.String, Enum: Priorities, Default: DefaultPriority,
			Description: "How urgent the problem is: low, normal (the default), high or urgent."},
		{Name: "tags", Kind: schema.StringList, Set: true, MaxItems: MaxTags, MinLength: 1, MaxLength: MaxTag,
			Description: "Up to 10 distinct labels of 1 to 32 characters each."},
	},
}

// Get is the get_ticket function.
var Get = &schema.Function{
	Name:        GetName,
	Description: "Read a support ticket by its id, as returned by create_ticket.",
	Params: []schema.Param{
		{Name: "ticket_id", Kind: schema.String, Required: true, Pattern: idPattern,
			PatternHint: "a ticket id such as 0f8e6c1a-3b2d-4c5e-9f70-1a2b3c4d5e6f",
			Description: "The ticket_id returned by create_ticket."},
	},
}

// Ticket is a support ticket. It belongs to exactly one tenant.
type Ticket struct {
	ID          string
	Tenant      string
	UserID      string
	Title       string
	Description string
	Priority    string
	Tags        []string
	CreatedAt   time.Time
	// Function is the tool whose call created it.
	Function string
	// OperationKey is the idempotency key of the operation that created it.
	OperationKey string
	// RequestID is the application's operation id it was created under.
	RequestID string
	// UserVersion is the version of its user's record that the call which
	// created it read: the ticket is delivered and shown only while that
	// record vouches for it (identity.User.Vouches).
	UserVersion int64
}

// FromArguments builds the ticket that create_ticket arguments describe,
// as Create.Normalize returned them: the same arguments the operation key
// is derived from, with the default priority filled in and the tags in one
// order. Ids, owner and provenance are the caller's to fill in.
func FromArguments(args map[string]any) Ticket {
	var t Ticket
	t.Title, _ = args["title"].(string)
	t.Description, _ = args["description"].(string)
	t.Priority, _ = args["priority"].(string)
	if tags, ok := args["tags"].([]any); ok {
		for _, tag := range tags {
			if s, ok := tag.(string); ok {
				t.Tags = append(t.Tags, s)
			}
		}
	}
	return t
}

// View is what get_ticket discloses about a ticket.
type View struct {
	ID          string   `json:"ticket_id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Priority    string   `json:"priority"`
	Tags        []string `json:"tags,omitempty"`
	CreatedAt   string   `json:"created_at"`
}

// View returns the fields of t that its tenant may read.
func (t *Ticket) View() View {
	return View{
		ID:          t.ID,
		Title:       t.Title,
		Description: t.Description,
		Priority:    t.Priority,
		Tags:        t.Tags,
		CreatedAt:   t.CreatedAt.UTC().Format(time.RFC3339),
	}
}

// NewID returns a random (version 4) UUID.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return formatID(b)
}

// IDFor returns the id of the first ticket userID's requestID creates,
// under the deployment's id key: the version and variant bits of a
// version 4 UUID around 122 bits of an HMAC-SHA256 of the two, so that
// the application's outcome read finds that ticket from the user and the
// request id with one read. Without the key an id is as unguessable as
// NewID's. A later ticket under the same request id (other arguments, or
// a call after the window) finds this id taken and gets a NewID.
func IDFor(key []byte, userID, requestID string) string {
	h := hmac.New(sha256.New, key)
	for _, s := range []string{userID, requestID} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var b [16]byte
	copy(b[:], h.Sum(nil))
	return formatID(b)
}

// IDKeyBytes is the length of the key IDFor takes.
const IDKeyBytes = 32

// Created is the stored result of create_ticket for ticket id: a JSON
// object in canonical form (RFC 8785: its two members in that order, the
// id escaped as canonjson.AppendString escapes it), so that a replay
// reads byte for byte like the first answer.
func Created(id string) []byte {
	b := make([]byte, 0, 40+len(id))
	b = append(b, `{"status":"created","ticket_id":`...)
	b = canonjson.AppendString(b, id)
	return append(b, '}')
}

// formatID writes b as a version 4 UUID, setting its version and variant
// bits.
func formatID(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// ValidID reports whether s has the form NewID produces.
func ValidID(s string) bool { return idPattern.MatchString(s) }
