package dynamo

import (
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
)

// LookupTimeLayout is the form of a ticket's lk_sort: its creation time in
// UTC with fixed width, so that LookupIndex, which orders sort keys as
// strings, lists a request's tickets oldest first.
const LookupTimeLayout = "2006-01-02T15:04:05.000000000Z"

// Kinds of LookupIndex partition, the first member of lk.
const (
	lookupRequest = "request"
	lookupTenant  = "tenant"
)

// lookupKey is the canonical JSON array of parts (RFC 8785: strings only,
// so no member order or number form to settle). Canonical JSON keeps any
// string, separators included, from running into the next part.
func lookupKey(parts ...string) string {
	b := make([]byte, 0, 16+8*len(parts))
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, p)
	}
	return string(append(b, ']'))
}

// requestLookup is lk of the tickets created for requestID in tenant.
func requestLookup(tenant, requestID string) string {
	return lookupKey(lookupRequest, tenant, requestID)
}

// tenantLookup is lk of tenant's users; their lk_sort is the user id.
func tenantLookup(tenant string) string { return lookupKey(lookupTenant, tenant) }

// lookupTime is a ticket's lk_sort.
func lookupTime(t time.Time) string { return t.UTC().Format(LookupTimeLayout) }
